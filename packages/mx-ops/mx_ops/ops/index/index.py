"""Registrations of take and one_hot, with MXNet's parameters.  Indices
may have any dtype; they are C-cast to int64 (floats truncate toward zero,
as MXNet's kernels do) before the mode bounds them."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.partial_infer import dtype_param, same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.index import _index_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_INDEX_GPU = "mx_ops.ops.index._index_gpu"

_KERNELS = _index_cpu.kernels()
_MODES = ("clip", "wrap", "raise")          # mxop::TakeMode order


def _take_axis(params, shapes):
    a, idx = tuple(shapes[0]), tuple(shapes[1])
    axis = params["axis"]
    if not -len(a) <= axis < len(a):
        raise ShapeError(f"take: argument 'axis' is {axis}, out of range for 'a' of shape {a}")
    axis %= len(a)
    if a[axis] == 0 and 0 not in idx:
        raise ShapeError(f"take: axis {params['axis']} of 'a' {a} is empty, so 'indices' of "
                         f"shape {idx} picks nothing")
    return axis


def _take_shape(params, shapes):
    a, axis = tuple(shapes[0]), _take_axis(params, shapes)
    return [a[:axis] + tuple(shapes[1]) + a[axis + 1:]]


def _take_pack(params, shapes):
    """mxop::TakeParam: the normalized axis and the mode's number."""
    return struct.pack("=qq", _take_axis(params, shapes), _MODES.index(params["mode"]))


register(OpDef(
    "take", arguments=("a", "indices"),
    input_docs={"a": "The array to take from.",
                "indices": "Indices along 'axis', any shape (cast to int)."},
    params={"axis": Param("int", 0, doc="The axis of 'a' to take from."),
            "mode": Param("str", "clip", choices=_MODES,
                          doc="Out-of-range indices: 'clip' to the ends, 'wrap' around, or "
                              "'raise' an error.")},
    infer_shape=_take_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["take"], gpu_compute(_INDEX_GPU, "take", _take_pack)),
    pack_params=_take_pack,
    doc="Entries of 'a' along 'axis' at 'indices'; the output has shape "
        "a.shape[:axis] + indices.shape + a.shape[axis+1:]."))


def _take_grad_shape(params, shapes):
    g, idx, a = (tuple(s) for s in shapes)
    want = _take_shape(params, [a, idx])[0]
    if g != want:
        raise ShapeError(f"_backward_take: argument 'ograd' has shape {g}; take of 'a' {a} at "
                         f"'indices' {idx} gives {want}")
    return [a]


def _take_grad_pack(params, shapes):
    """mxop::TakeParam of the forward take ('a' is the third input)."""
    return _take_pack(params, [shapes[2], shapes[1]])


def _take_grad_type(params, dtypes):
    if dtypes[2] != dtypes[0]:
        raise TypeInferenceError(f"_backward_take: argument 'a' has dtype {dtypes[2]}, "
                                 f"'ograd' {dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "_backward_take", arguments=("ograd", "indices", "a"),
    params={"axis": Param("int", 0, doc="The axis of 'a' taken from."),
            "mode": Param("str", "clip", choices=_MODES, doc="The forward's mode.")},
    infer_shape=_take_grad_shape, infer_type=_take_grad_type,
    compute=computes(_KERNELS["take_backward"],
                     gpu_compute(_INDEX_GPU, "take_backward", _take_grad_pack)),
    pack_params=_take_grad_pack,
    doc="take's gradient with respect to 'a' (read for its shape only): zeros with each "
        "index's rows of 'ograd' added to the row it picked (duplicates accumulate)."))


def _one_hot_shape(params, shapes):
    if params["depth"] <= 0:
        raise ShapeError(f"one_hot: argument 'depth' must be positive, got {params['depth']} "
                         f"(for 'indices' of shape {tuple(shapes[0])})")
    return [tuple(shapes[0]) + (params["depth"],)]


def _one_hot_pack(params, shapes):
    """mxop::OneHotParam."""
    return struct.pack("=qdd", params["depth"], params["on_value"], params["off_value"])


register(OpDef(
    "one_hot", arguments=("indices",),
    input_docs={"indices": "Class indices, any shape (cast to int)."},
    params={"depth": Param("int", doc="The size of the one-hot axis."),
            "on_value": Param("float", 1.0, doc="The value where indices[j] == i."),
            "off_value": Param("float", 0.0, doc="The value everywhere else."),
            "dtype": Param("dtype", "float32", doc="The output's dtype.")},
    infer_shape=_one_hot_shape, infer_type=lambda p, t: [p["dtype"]],
    compute=computes(_KERNELS["one_hot"], gpu_compute(_INDEX_GPU, "one_hot", _one_hot_pack)),
    pack_params=_one_hot_pack,
    differentiable=False,
    doc="One-hot rows: output[..., i] is on_value where indices == i, else off_value; "
        "indices outside [0, depth) give rows of off_value."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

def _take(node, ograds):
    a, idx = node.inputs
    p = node.params
    return [apply("_backward_take", ograds[0], idx, a, axis=p["axis"], mode=p["mode"]),
            zeros_like(idx)]


def _backward_take(node, ograds):
    g, idx, a = node.inputs
    p = node.params
    return [apply("take", ograds[0], idx, axis=p["axis"], mode=p["mode"]), zeros_like(idx),
            zeros_like(a)]


set_gradient("take", _take)
set_gradient("_backward_take", _backward_take)


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------
set_infer_type_partial("one_hot", dtype_param)
# The data and the output share a dtype; the indices have their own (MXNet
# requires them known rather than guessing).
set_infer_type_partial("take", same_type(inputs=(0,)))
