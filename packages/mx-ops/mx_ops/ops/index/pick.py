"""Registrations of pick (alias choose_element_0index), batch_take,
_backward_pick and fill_element_0index: one element per row of an axis.
Indices of any dtype are C-cast to int64 (floats truncate toward zero), then
clipped or wrapped (pick's mode; batch_take clips)."""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.partial_infer import same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.index import _pick_cpu

_PICK_GPU = "mx_ops.ops.index._pick_gpu"
_KERNELS = _pick_cpu.kernels()
_MODES = ("clip", "wrap")                 # mxop::PickParam.mode


def _pick_axis(op, params, shape):
    axis = params["axis"]
    if axis is None:
        raise ShapeError(f"{op}: axis=None is not supported; name the axis to pick along")
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for 'data' of "
                         f"shape {tuple(shape)}")
    return axis % len(shape)


def _index_shape(params, data):
    """The index's (and the output's) shape: the data's without the axis (with
    it as 1 under keepdims)."""
    a = _pick_axis("pick", params, data)
    data = tuple(data)
    return data[:a] + ((1,) if params["keepdims"] else ()) + data[a + 1:]


def _pick_shape(params, shapes):
    want = _index_shape(params, shapes[0])
    if math.prod(shapes[1]) != math.prod(want) or (
            tuple(shapes[1]) != want and len(shapes[1]) == len(want)):
        raise ShapeError(f"pick: argument 'index' has shape {tuple(shapes[1])}; picking along "
                         f"axis {params['axis']} of 'data' {tuple(shapes[0])} needs {want}")
    return [want]


def _pick_pack(params, shapes):
    return struct.pack("=qq", _pick_axis("pick", params, shapes[0]),
                       _MODES.index(params["mode"]))


def _pick_type(params, dtypes):
    if dtypes[1] is None:
        raise TypeInferenceError("pick: the dtype of argument 'index' must be known")
    return [dtypes[0]]


_PICK_PARAMS = {
    "axis": Param("int", -1, optional=True,
                  doc="The axis to pick along; negative values count from the "
                                 "end (None is not supported, as in MXNet)."),
    "keepdims": Param("bool", False, doc="Keep the axis, as size 1."),
    "mode": Param("str", "clip", choices=_MODES,
                  doc="Out-of-range indices: 'clip' to the ends or 'wrap' around.")}

register(OpDef(
    "pick", arguments=("data", "index"),
    input_docs={"data": "The input array.",
                "index": "The index along 'axis' of each element to pick: the data's shape "
                         "without the axis (any dtype, cast to int)."},
    params=_PICK_PARAMS, aliases=("choose_element_0index",),
    infer_shape=_pick_shape, infer_type=_pick_type,
    compute=computes(_KERNELS["pick"], gpu_compute(_PICK_GPU, "pick", _pick_pack)),
    pack_params=_pick_pack,
    doc="One element of every row along 'axis': out[..., i, ...] = "
        "data[..., index[..., i, ...], ...]."))


def _pick_grad_shape(params, shapes):
    g, idx, data = (tuple(s) for s in shapes)
    _pick_shape(params, [data, idx])
    if math.prod(g) != math.prod(idx):
        raise ShapeError(f"_backward_pick: argument 'ograd' {g} does not match 'index' {idx}")
    return [data]


register(OpDef(
    "_backward_pick", arguments=("ograd", "index", "data"), params=_PICK_PARAMS,
    infer_shape=_pick_grad_shape, infer_type=lambda p, t: [t[0]], differentiable=False,
    compute=computes(_KERNELS["pick_backward"],
                     gpu_compute(_PICK_GPU, "pick_backward",
                                 lambda p, s: _pick_pack(p, [s[2], s[1]]))),
    pack_params=lambda p, s: _pick_pack(p, [s[2], s[1]]),
    doc="pick's gradient with respect to 'data' (read for its shape only): zeros with "
        "each 'ograd' element at the position it was picked from."))


def _batch_take_shape(params, shapes):
    a, idx = tuple(shapes[0]), tuple(shapes[1])
    if not a or a[-1] == 0 or math.prod(a) // a[-1] != math.prod(idx):
        raise ShapeError(f"batch_take: argument 'indices' of shape {idx} must have one index "
                         f"per row of the last axis of 'a' {a}")
    return [idx]


def _batch_take_type(params, dtypes):
    if dtypes[1] != "int32":
        raise TypeInferenceError(f"batch_take: argument 'indices' must be int32, got "
                                 f"{dtypes[1]}")
    return [dtypes[0]]


register(OpDef(
    "batch_take", arguments=("a", "indices"),
    input_docs={"a": "The input array; rows along its last axis.",
                "indices": "One int32 index per row (clipped to the row)."},
    infer_shape=_batch_take_shape, infer_type=_batch_take_type, differentiable=False,
    compute=computes(_KERNELS["pick"], gpu_compute(
        _PICK_GPU, "pick", lambda p, s: struct.pack("=qq", len(s[0]) - 1, 0))),
    pack_params=lambda p, s: struct.pack("=qq", len(s[0]) - 1, 0),
    doc="Deprecated (use pick): out[i] = a[i, indices[i]] over the rows of 'a''s last axis, "
        "indices clipped."))


def _fill_shape(params, shapes):
    lhs, mhs, rhs = (tuple(s) for s in shapes)
    if len(lhs) != 2 or mhs != lhs[:1] or rhs != lhs[:1]:
        raise ShapeError(f"fill_element_0index: 'lhs' must be 2-D and 'mhs', 'rhs' 1-D of its "
                         f"rows, got {lhs}, {mhs}, {rhs}")
    return [lhs]


def _fill_type(params, dtypes):
    if dtypes[1] != dtypes[0]:
        raise TypeInferenceError(f"fill_element_0index: 'mhs' has dtype {dtypes[1]}, 'lhs' "
                                 f"{dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "fill_element_0index", arguments=("lhs", "mhs", "rhs"),
    input_docs={"lhs": "Left operand: the matrix to fill (2-D).",
                "mhs": "Middle operand: one value per row.",
                "rhs": "Right operand: the column of each row to replace (cast to int)."},
    infer_shape=_fill_shape, infer_type=_fill_type, differentiable=False,
    compute=computes(_KERNELS["fill_element_0index"],
                     gpu_compute(_PICK_GPU, "fill_element_0index")),
    doc="lhs with element rhs[i] of row i set to mhs[i]; an index outside the row "
        "changes nothing."))


# --- gradients and partial inference ------------------------------------------------

def _pick(node, ograds):
    data, idx = node.inputs
    return [apply("_backward_pick", ograds[0], idx, data, **node.params), zeros_like(idx)]


set_gradient("pick", _pick)
# The data and the output share a dtype; the index has its own, which MXNet
# requires known rather than guessed.
set_infer_type_partial("pick", same_type(inputs=(0,)))
set_infer_type_partial("batch_take", same_type(inputs=(0,)))
set_infer_type_partial("fill_element_0index", same_type(inputs=(0, 1)))
