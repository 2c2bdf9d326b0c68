"""Gradients of the shape, join, index, assignment and selection operators
and of the like-ops.  Makers run on a node graph without shapes or dtypes,
so where a gradient needs an input's shape or dtype its node takes that
input too (reshape_like(g, x), _backward_slice(g, x), _backward_Cast(g, x),
...).  Index inputs (take's, gather_nd's, ...) and the inputs read for
their shape only get zero gradients, as MXNet gives them (zeros_like)."""
from mx_ops.gradient import apply, set_gradient
from mx_ops.node import make_node


def _zeros(x):
    return apply("zeros_like", x)


def _reshape_back(node, ograds):
    """The gradient of a copy in a new shape: g reshaped back to the input's."""
    return [apply("reshape_like", ograds[0], node.inputs[0])]


def _concat(node, ograds):
    back = make_node("_backward_Concat", [ograds[0]] + list(node.inputs),
                     name=f"{node.name}_backward", dim=node.params["dim"])
    return back.outputs()


def _split(node, ograds):
    """SliceChannel's outputs joined back (MXNet's Concat of the ograds),
    each squeezed one first given back its axis."""
    axis = node.params["axis"]
    parts = list(ograds)
    if node.params["squeeze_axis"]:
        parts = [apply("expand_dims", g, axis=axis) for g in parts]
    return [apply("Concat", *parts, dim=axis)]


def _slice(node, ograds):
    p = node.params
    return [apply("_backward_slice", ograds[0], node.inputs[0], begin=p["begin"], end=p["end"],
                  step=p["step"])]


def _slice_axis(node, ograds):
    p = node.params
    return [apply("_backward_slice_axis", ograds[0], node.inputs[0], axis=p["axis"],
                  begin=p["begin"], end=p["end"])]


def _region(p):
    return {"begin": p["begin"], "end": p["end"], "step": p["step"]}


def _slice_assign(node, ograds):
    """out = lhs with the region set to rhs: lhs gets g outside the region,
    rhs gets g's region.  (MXNet 1.x registers no gradient here.)"""
    g, region = ograds[0], _region(node.params)
    return [apply("_slice_assign_scalar", g, scalar=0.0, **region), apply("slice", g, **region)]


def _slice_assign_scalar(node, ograds):
    return [apply("_slice_assign_scalar", ograds[0], scalar=0.0, **_region(node.params))]


def _take(node, ograds):
    a, idx = node.inputs
    p = node.params
    return [apply("_backward_take", ograds[0], idx, a, axis=p["axis"], mode=p["mode"]),
            _zeros(idx)]


def _gather_nd(node, ograds):
    data, idx = node.inputs
    return [apply("_backward_gather_nd", ograds[0], idx, data), _zeros(idx)]


def _scatter_nd(node, ograds):
    """MXNet's: gather_nd of g at the indices (zeros for the indices)."""
    idx = node.inputs[1]
    return [apply("gather_nd", ograds[0], idx), _zeros(idx)]


def _scatter_set_nd(node, ograds):
    """out = lhs with rows set from rhs: lhs gets g with those rows zeroed,
    rhs gets g's rows.  (MXNet 1.x registers no gradient here.)"""
    g, (lhs, rhs, idx) = ograds[0], node.inputs
    return [apply("_scatter_set_nd", g, _zeros(rhs), idx, shape=node.params["shape"]),
            apply("gather_nd", g, idx), _zeros(idx)]


def _clip(node, ograds):
    """MXNet's _backward_clip: g where a_min <= x <= a_max, else 0."""
    x, p = node.inputs[0], node.params
    inside = apply("elemwise_mul", apply("_greater_equal_scalar", x, scalar=p["a_min"]),
                   apply("_lesser_equal_scalar", x, scalar=p["a_max"]))
    return [apply("elemwise_mul", ograds[0], inside)]


def _where(node, ograds):
    cond = node.inputs[0]
    g = ograds[0]
    zero = _zeros(g)
    return [_zeros(cond), apply("where", cond, g, zero), apply("where", cond, zero, g)]


def _broadcast_to(node, ograds):
    return [apply("_collapse_sum_like", ograds[0], node.inputs[0])]


def _cast(node, ograds):
    return [apply("_backward_Cast", ograds[0], node.inputs[0])]


# --- the like-ops and the linear backward ops -------------------------------------------
def _reshape_like(node, ograds):
    lhs, rhs = node.inputs
    return [apply("reshape_like", ograds[0], lhs), _zeros(rhs)]


def _broadcast_like(node, ograds):
    lhs, rhs = node.inputs
    return [apply("_collapse_sum_like", ograds[0], lhs), _zeros(rhs)]


def _collapse_sum_like(node, ograds):
    """The sum's gradient: g broadcast back to data's shape (broadcast_add
    onto zeros of it, NumPy's rule: ``like`` may have fewer axes)."""
    data, like = node.inputs
    return [apply("broadcast_add", _zeros(data), ograds[0]), _zeros(like)]


def _broadcast_reduce_like(node, ograds):
    """The repeat's gradient is the reduction it undoes: the sum over the
    repeated axes, or their mean with normalize (its scale is 1 / their
    count)."""
    data, like = node.inputs
    p = node.params
    op = "mean" if p["normalize"] else "sum"
    return [apply(op, ograds[0], axis=p["axis"], keepdims=p["keepdims"], exclude=p["exclude"]),
            _zeros(like)]


def _backward_cast(node, ograds):
    g, like = node.inputs
    return [apply("_backward_Cast", ograds[0], g), _zeros(like)]


def _backward_concat(node, ograds):
    parts = node.inputs[1:]
    return ([apply("Concat", *ograds, dim=node.params["dim"])]
            + [_zeros(x) for x in parts])


def _backward_slice(node, ograds):
    p = node.params
    return [apply("slice", ograds[0], **_region(p)), _zeros(node.inputs[1])]


def _backward_slice_axis(node, ograds):
    p = node.params
    return [apply("slice_axis", ograds[0], axis=p["axis"], begin=p["begin"], end=p["end"]),
            _zeros(node.inputs[1])]


def _backward_take(node, ograds):
    g, idx, a = node.inputs
    p = node.params
    return [apply("take", ograds[0], idx, axis=p["axis"], mode=p["mode"]), _zeros(idx),
            _zeros(a)]


def _backward_gather_nd(node, ograds):
    g, idx, data = node.inputs
    return [apply("gather_nd", ograds[0], idx), _zeros(idx), _zeros(data)]


MAKERS = {
    "Reshape": _reshape_back, "Flatten": _reshape_back, "expand_dims": _reshape_back,
    "Concat": _concat, "SliceChannel": _split, "slice": _slice, "slice_axis": _slice_axis,
    "_slice_assign": _slice_assign, "_slice_assign_scalar": _slice_assign_scalar,
    "take": _take, "gather_nd": _gather_nd, "scatter_nd": _scatter_nd,
    "_scatter_set_nd": _scatter_set_nd, "clip": _clip, "where": _where,
    "broadcast_to": _broadcast_to, "Cast": _cast,
    "reshape_like": _reshape_like, "broadcast_like": _broadcast_like,
    "_collapse_sum_like": _collapse_sum_like, "_broadcast_reduce_like": _broadcast_reduce_like,
    "_backward_Cast": _backward_cast, "_backward_Concat": _backward_concat,
    "_backward_slice": _backward_slice, "_backward_slice_axis": _backward_slice_axis,
    "_backward_take": _backward_take, "_backward_gather_nd": _backward_gather_nd,
}
for _name, _maker in MAKERS.items():
    set_gradient(_name, _maker)
