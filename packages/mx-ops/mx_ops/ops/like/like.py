"""Operators whose output takes its shape (or dtype) from another input,
which is read for nothing else: MXNet's public reshape_like and
broadcast_like, and the helpers that let gradient makers, which run
without shapes or dtypes, undo a broadcast, a reduction or a cast:

- ``_collapse_sum_like(data, like)`` sums ``data`` down to the shape of
  ``like`` (the reverse of NumPy broadcasting: the broadcast binary ops'
  and broadcast_to's gradients);
- ``_broadcast_reduce_like(data, like, axis, keepdims, exclude, normalize)``
  repeats a reduction's result (or its gradient) over the reduced axes of
  the reduced input ``like`` (sum's gradient; mean's with normalize);
- ``_backward_Cast(ograd, like)`` casts a gradient back to the dtype of
  the cast's input.

Each reuses an existing kernel: the copy, the strided gather of
ops/shape/shape_cpu.h (its strides packed from the shapes), the sum of
ops/reduce/reduce_cpu.h (its axes found from the shapes at pack time) and the
cast of ops/init/init_cpu.h.
"""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.elemwise import _elemwise_cpu
from mx_ops.ops.init import _init_cpu
from mx_ops.ops.reduce import _reduce_cpu
from mx_ops.ops.reduce.reduce import MAX_DIM, REDUCE_PARAMS, reduce_shape, reduced_axes
from mx_ops.ops.shape import _shape_cpu
from mx_ops.ops.shape.shape import _gather, _pack_broadcast, _strides

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_INIT_GPU = "mx_ops.ops.init._init_gpu"
_LIKE_GPU = "mx_ops.ops.like._like_gpu"
_SHAPE_GPU = "mx_ops.ops.shape._shape_gpu"

_COPY = _elemwise_cpu.kernels()["unary"]["copy"]
_GATHER = _shape_cpu.kernels()
_SUM = _reduce_cpu.kernels()["sum"]
_CAST = _init_cpu.kernels()["cast"]


def _lhs_type(params, dtypes):
    return [dtypes[0]]


# --- reshape_like -----------------------------------------------------------------------
def _range(ndim, side, begin, end):
    """MXNet's ReshapeLikeRangeCanonicalize: [begin, end) of ``ndim`` axes,
    negatives counted from the end, None for the edges.  An empty range is
    allowed (MXNet refuses it), so that 0-d arrays reshape too."""
    b = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise ShapeError(f"reshape_like: arguments '{side}_begin' ({begin}) and '{side}_end' "
                         f"({end}) give no valid range of the {ndim} axes of '{side}'")
    return b, e


def _reshape_like_shape(params, shapes):
    lhs, rhs = tuple(shapes[0]), tuple(shapes[1])
    lb, le = _range(len(lhs), "lhs", params["lhs_begin"], params["lhs_end"])
    rb, re = _range(len(rhs), "rhs", params["rhs_begin"], params["rhs_end"])
    out = lhs[:lb] + rhs[rb:re] + lhs[le:]
    if math.prod(out) != math.prod(lhs):
        raise ShapeError(f"reshape_like: cannot reshape 'lhs' of shape {lhs} to {out} (from "
                         f"'rhs' {rhs}): the sizes differ")
    return [out]


register(OpDef(
    "reshape_like", arguments=("lhs", "rhs"),
    params={"lhs_begin": Param("int", None, doc="First axis of 'lhs' replaced (None: 0)."),
            "lhs_end": Param("int", None, doc="End of the axes of 'lhs' replaced (None: all)."),
            "rhs_begin": Param("int", None, doc="First axis of 'rhs' copied (None: 0)."),
            "rhs_end": Param("int", None, doc="End of the axes of 'rhs' copied (None: all).")},
    infer_shape=_reshape_like_shape, infer_type=_lhs_type,
    compute=computes(_COPY, gpu_compute(_SHAPE_GPU, "copy")), inplace=((0, 0),),
    doc="``lhs`` reshaped: its axes lhs_begin:lhs_end replaced by the axes rhs_begin:rhs_end "
        "of the shape of ``rhs`` (all of them by default); ``rhs`` is read for its shape "
        "only."))


# --- broadcast_like ---------------------------------------------------------------------
def _broadcast_like_shape(params, shapes):
    lhs, rhs = tuple(shapes[0]), tuple(shapes[1])
    la, ra = params["lhs_axes"], params["rhs_axes"]
    if la is None or ra is None:
        if len(lhs) != len(rhs) or any(a != b and a != 1 for a, b in zip(lhs, rhs)):
            raise ShapeError(f"broadcast_like: 'lhs' of shape {lhs} does not broadcast to "
                             f"'rhs' {rhs}")
        return [rhs]
    if len(la) != len(ra) or not la:
        raise ShapeError(f"broadcast_like: arguments 'lhs_axes' {la} and 'rhs_axes' {ra} must "
                         f"be non-empty and of one length")
    out = list(lhs)
    for a, b in zip(la, ra):
        if not -len(lhs) <= a < len(lhs) or not -len(rhs) <= b < len(rhs):
            raise ShapeError(f"broadcast_like: axes {la} of 'lhs' {lhs} or {ra} of 'rhs' {rhs} "
                             f"are out of range")
        if lhs[a] != 1:
            raise ShapeError(f"broadcast_like: axis {a} of 'lhs' {lhs} has size {lhs[a]}; only "
                             f"an axis of size 1 broadcasts")
        out[a] = rhs[b]
    return [tuple(out)]


register(OpDef(
    "broadcast_like", arguments=("lhs", "rhs"),
    params={"lhs_axes": Param("shape", None, doc="Axes of 'lhs' to broadcast (None: all)."),
            "rhs_axes": Param("shape", None, doc="The axes of 'rhs' giving their sizes.")},
    infer_shape=_broadcast_like_shape, infer_type=_lhs_type,
    compute=computes(_GATHER["gather"], gpu_compute(_SHAPE_GPU, "gather", _pack_broadcast)),
    pack_params=_pack_broadcast,
    doc="``lhs`` with axes of size 1 repeated to the shape of ``rhs`` (or only lhs_axes, to "
        "the sizes of rhs_axes of ``rhs``); ``rhs`` is read for its shape only."))


# --- _collapse_sum_like -----------------------------------------------------------------
def collapse_axes(op, data, like):
    """The axes of ``data`` that summing down to ``like`` reduces: the
    leading axes ``like`` lacks, and those where ``like`` has size 1 (NumPy's
    broadcasting rule, run backwards); ShapeError where ``like`` does not
    broadcast to ``data``."""
    data, like = tuple(data), tuple(like)
    lead = len(data) - len(like)
    if lead < 0 or any(b != a and b != 1 for a, b in zip(data[lead:], like)):
        raise ShapeError(f"{op}: argument 'like' of shape {like} does not broadcast to 'data' "
                         f"{data}")
    return [d for d in range(len(data)) if d < lead or (like[d - lead] == 1 and data[d] != 1)]


def _collapse_pack(params, shapes):
    """mxop::red::ReduceParam of the sum: the collapsed axes (none: a copy)."""
    axes = collapse_axes("_collapse_sum_like", shapes[0], shapes[1])
    return struct.pack(f"=4i{MAX_DIM}i", 0, 0, len(axes), 2, *(axes + [0] * (MAX_DIM - len(axes))))


def _collapse_shape(params, shapes):
    collapse_axes("_collapse_sum_like", shapes[0], shapes[1])
    return [tuple(shapes[1])]


register(OpDef(
    "_collapse_sum_like", arguments=("data", "like"), infer_shape=_collapse_shape,
    input_docs={"like": "The array whose shape the sum takes (read for its shape only)."},
    infer_type=_lhs_type,
    compute=computes(_SUM, gpu_compute(_LIKE_GPU, "collapse_sum")),
    pack_params=_collapse_pack,
    doc="``data`` summed down to the shape of ``like`` (read for its shape only), which must "
        "broadcast to it: over the leading axes ``like`` lacks and where it has size 1."))


# --- _broadcast_reduce_like -------------------------------------------------------------
def _reduced(params, like):
    return reduced_axes("_broadcast_reduce_like", params, like)


def _unreduce_shape(params, shapes):
    data, like = tuple(shapes[0]), tuple(shapes[1])
    want = reduce_shape("_broadcast_reduce_like", params, like)
    if data != want:
        raise ShapeError(f"_broadcast_reduce_like: argument 'data' has shape {data}; reducing "
                         f"'like' {like} with axis={params['axis']}, keepdims="
                         f"{params['keepdims']}, exclude={params['exclude']} gives {want}")
    return [like]


def _unreduce_pack(params, shapes):
    """mxop::ScaledGatherParam: stride 0 on the reduced axes of 'like', the
    row-major strides of the kept ones (``data`` holds them in order), and
    1 / the number of reduced elements with normalize."""
    like = tuple(shapes[1])
    red = set(_reduced(params, like))
    kept = [d for d in range(len(like)) if d not in red]
    kstrides = dict(zip(kept, _strides([like[d] for d in kept])))
    strides = [0 if d in red else kstrides[d] for d in range(len(like))]
    n_red = math.prod(like[d] for d in red)
    scale = 1.0 / n_red if params["normalize"] and n_red else 1.0
    return _gather(0, strides) + struct.pack("=d", scale)


register(OpDef(
    "_broadcast_reduce_like", arguments=("data", "like"),
    input_docs={"data": "A reduction's result.",
                "like": "The reduced array, whose shape the result takes."},
    params={**REDUCE_PARAMS,
            "normalize": Param("bool", False, doc="Divide by the number of reduced elements "
                                                  "(mean's gradient).")},
    infer_shape=_unreduce_shape, infer_type=_lhs_type,
    compute=computes(_GATHER["gather_scaled"],
                     gpu_compute(_SHAPE_GPU, "gather_scaled", _unreduce_pack)),
    pack_params=_unreduce_pack,
    doc="A reduction's result ``data`` (the reduction of ``like`` with these axis, keepdims "
        "and exclude) repeated over the reduced axes to the shape of ``like``, which is read "
        "for its shape only; with normalize divided by the number of reduced elements."))


# --- _backward_Cast ---------------------------------------------------------------------
register(OpDef(
    "_backward_Cast", arguments=("ograd", "data"),
    infer_shape=lambda params, shapes: [tuple(shapes[0])],
    infer_type=lambda params, dtypes: [dtypes[1]],
    compute=computes(_CAST, gpu_compute(_INIT_GPU, "cast")), aliases=("_backward_cast",),
    doc="Cast's gradient: ``ograd`` converted to the dtype of the cast's input ``data`` "
        "(read for its dtype only; the shapes may differ)."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

def _reshape_like(node, ograds):
    lhs, rhs = node.inputs
    return [apply("reshape_like", ograds[0], lhs), zeros_like(rhs)]


def _broadcast_like(node, ograds):
    lhs, rhs = node.inputs
    return [apply("_collapse_sum_like", ograds[0], lhs), zeros_like(rhs)]


def _collapse_sum_like(node, ograds):
    """The sum's gradient: g broadcast back to data's shape (broadcast_add
    onto zeros of it, NumPy's rule: ``like`` may have fewer axes)."""
    data, like = node.inputs
    return [apply("broadcast_add", zeros_like(data), ograds[0]), zeros_like(like)]


def _broadcast_reduce_like(node, ograds):
    """The repeat's gradient is the reduction it undoes: the sum over the
    repeated axes, or their mean with normalize (its scale is 1 / their
    count)."""
    data, like = node.inputs
    p = node.params
    op = "mean" if p["normalize"] else "sum"
    return [apply(op, ograds[0], axis=p["axis"], keepdims=p["keepdims"], exclude=p["exclude"]),
            zeros_like(like)]


def _backward_cast(node, ograds):
    g, like = node.inputs
    return [apply("_backward_Cast", ograds[0], g), zeros_like(like)]


_GRADIENTS = {"reshape_like": _reshape_like, "broadcast_like": _broadcast_like, "_collapse_sum_like": _collapse_sum_like, "_broadcast_reduce_like": _broadcast_reduce_like, "_backward_Cast": _backward_cast}
for _name, _maker in _GRADIENTS.items():
    set_gradient(_name, _maker)
