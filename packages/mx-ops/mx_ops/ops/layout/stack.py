"""squeeze (the copy, in a shape without axes of size 1), stack (Concat's
blocked copy: seen around the new axis each input is one part of the
output's rows) and _split_v2 (SliceChannel's copy into parts of given
sizes), with MXNet's parameters."""
import struct

from mx_ops.core._limits import MAX_COUNT
from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient
from mx_ops.core.node import make_node
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.join import _join_cpu
from mx_ops.ops.join.join import _split as _split_grad
from mx_ops.ops.shape.shape import _COPY_COMPUTE

_JOIN_GPU = "mx_ops.ops.join._join_gpu"
_JOIN = _join_cpu.kernels()


def _axis(op, axis, ndim):
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for {ndim} axes")
    return axis % ndim


# --- squeeze -----------------------------------------------------------------------------
def _squeeze_shape(params, shapes):
    shape = tuple(shapes[0])
    if params["axis"] is None:
        drop = {d for d, n in enumerate(shape) if n == 1}
    else:
        drop = {_axis("squeeze", a, len(shape)) for a in params["axis"]}
        for d in drop:
            if shape[d] != 1:
                raise ShapeError(f"squeeze: axis {d} of 'data' {shape} has size {shape[d]}; "
                                 f"only axes of size 1 are squeezed")
    # MXNet keeps one axis where every axis goes
    return [tuple(n for d, n in enumerate(shape) if d not in drop) or (1,)]


register(OpDef(
    "squeeze", arguments=("data",),
    params={"axis": Param("shape", None, doc="Selects a subset of the single-dimensional "
                                             "entries in the shape; None: all of them.")},
    infer_shape=_squeeze_shape, infer_type=lambda p, t: [t[0]], compute=_COPY_COMPUTE,
    inplace=((0, 0),), doc="Removes single-dimensional entries from the shape of an array."))


# --- stack -------------------------------------------------------------------------------
def _stack_shape(params, shapes):
    first = tuple(shapes[0])
    for i, s in enumerate(shapes[1:], 1):
        if tuple(s) != first:
            raise ShapeError(f"stack: argument 'arg{i}' has shape {tuple(s)}, which differs "
                             f"from 'arg0' {first}")
    axis = _axis("stack", params["axis"], len(first) + 1)
    return [first[:axis] + (len(shapes),) + first[axis:]]


def _stack_type(params, dtypes):
    for i, d in enumerate(dtypes[1:], 1):
        if d != dtypes[0]:
            raise TypeInferenceError(f"stack: argument 'arg{i}' has dtype {d}, which differs "
                                     f"from 'arg0' {dtypes[0]}")
    return [dtypes[0]]


def _stack_pack(params, shapes):
    """mxop::JoinParam: the new axis, normalized for the output."""
    return struct.pack("=q", _axis("stack", params["axis"], len(shapes[0]) + 1))


register(OpDef(
    "stack", arguments=("data",), key_var_num_args="num_args",
    input_docs={"data": "List of arrays to stack, all of one shape."},
    params={"num_args": Param("int", low=1, high=MAX_COUNT, doc="Number of inputs to be "
                                                                 "stacked."),
            "axis": Param("int", 0, doc="The axis in the result array along which the input "
                                        "arrays are stacked.")},
    infer_shape=_stack_shape, infer_type=_stack_type,
    compute=computes(_JOIN["concat"], gpu_compute(_JOIN_GPU, "concat", _stack_pack)),
    pack_params=_stack_pack, doc="Joins a sequence of arrays along a new axis."))


# --- _split_v2 ----------------------------------------------------------------------------
def _split_bounds(params, shape):
    """The split axis and the (start, stop) of each part."""
    axis = _axis("_split_v2", params["axis"], len(shape))
    n, sections = shape[axis], params["sections"]
    if sections > 0:
        if n % sections:
            raise ShapeError(f"_split_v2: axis {axis} of 'data' {shape} has size {n}, which "
                             f"sections={sections} does not divide")
        starts = list(range(0, n, n // sections)) if n else [0] * sections
    else:
        starts = list(params["indices"])
        if not starts or any(b < a for a, b in zip(starts, starts[1:])) or starts[-1] > n:
            raise ShapeError(f"_split_v2: argument 'indices' {tuple(starts)} must be "
                             f"non-empty, increasing and within axis {axis} of 'data' {shape}")
    return axis, list(zip(starts, starts[1:] + [n]))


def _split_shape(params, shapes):
    shape = tuple(shapes[0])
    axis, bounds = _split_bounds(params, shape)
    out = []
    for a, b in bounds:
        if params["squeeze_axis"]:
            if b - a != 1:
                raise ShapeError(f"_split_v2: squeeze_axis=True needs parts of size 1 along "
                                 f"axis {axis} of 'data' {shape}")
            out.append(shape[:axis] + shape[axis + 1:])
        else:
            out.append(shape[:axis] + (b - a,) + shape[axis + 1:])
    return out


def _split_pack(params, shapes):
    return struct.pack("=q", _axis("_split_v2", params["axis"], len(shapes[0])))


def _num_outputs(params):
    return params["sections"] if params["sections"] > 0 else len(params["indices"])


register(OpDef(
    "_split_v2", arguments=("data",),
    outputs=lambda p: [f"output{i}" for i in range(_num_outputs(p))],
    params={"indices": Param("shape", doc="Indices of splits; the first is 0."),
            "axis": Param("int", 1, doc="Axis along which to split."),
            "squeeze_axis": Param("bool", False, doc="Drop the split axis from parts of size "
                                                     "1."),
            "sections": Param("int", 0, low=0, high=MAX_COUNT, doc="Number of equal sections "
                                                                   "(0: use indices).")},
    infer_shape=_split_shape, infer_type=lambda p, t: [t[0]] * _num_outputs(p),
    compute=computes(_JOIN["split"], gpu_compute(_JOIN_GPU, "split", _split_pack)),
    pack_params=_split_pack,
    doc="Splits an array along an axis at the given indices (or into equal sections)."))


# --- gradients ------------------------------------------------------------------------------
def _stack_grad(node, ograds):
    return make_node("SliceChannel", [ograds[0]], num_outputs=len(node.inputs),
                     axis=node.params["axis"], squeeze_axis=True).outputs()


set_gradient("squeeze", lambda node, ograds: [apply("reshape_like", ograds[0],
                                                    node.inputs[0])])
set_gradient("stack", _stack_grad)
set_gradient("_split_v2", _split_grad)      # SliceChannel's: the parts joined back
