"""Gradients of the shape operators.  Makers run on a node graph without
shapes or dtypes, so where a gradient needs an input's shape its node takes
that input too (reshape_like(g, x), _backward_slice(g, x), ...); the other
families' makers follow the same rule, and give the inputs read for their
shape or as indices zero gradients, as MXNet does (core.gradient's
zeros_like)."""
from mx_ops.core.gradient import apply, set_gradient, zeros_like


def _zeros(node, ograds):
    return [zeros_like(node.inputs[0])]


def _reshape_back(node, ograds):
    """The gradient of a copy in a new shape: g reshaped back to the input's."""
    return [apply("reshape_like", ograds[0], node.inputs[0])]


def _slice(node, ograds):
    p = node.params
    return [apply("_backward_slice", ograds[0], node.inputs[0], begin=p["begin"], end=p["end"],
                  step=p["step"])]


def _slice_axis(node, ograds):
    p = node.params
    return [apply("_backward_slice_axis", ograds[0], node.inputs[0], axis=p["axis"],
                  begin=p["begin"], end=p["end"])]


def _broadcast_to(node, ograds):
    return [apply("_collapse_sum_like", ograds[0], node.inputs[0])]


def _transpose_maker(node, ograds):
    axes = node.params["axes"]
    if not axes:                    # reversed axes are their own inverse
        return [apply("transpose", ograds[0])]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a % len(axes)] = i
    return [apply("transpose", ograds[0], axes=tuple(inverse))]


for _name, _maker in (("Reshape", _reshape_back), ("Flatten", _reshape_back),
                      ("expand_dims", _reshape_back), ("slice", _slice),
                      ("slice_axis", _slice_axis), ("broadcast_to", _broadcast_to),
                      ("transpose", _transpose_maker),
                      # MXNet's MakeZeroGradNodes: the shape does not depend on the values
                      ("shape_array", _zeros), ("size_array", _zeros)):
    set_gradient(_name, _maker)
