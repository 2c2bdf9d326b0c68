"""Registrations of Concat (variadic: ``num_args`` inputs) and SliceChannel
(``num_outputs`` outputs), with MXNet's names, defaults and checks.  Both
run one blocked copy (join_cpu.h) packed with the joined axis."""
import struct

from mx_ops.core._limits import MAX_COUNT
from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.node import make_node
from mx_ops.core.partial_infer import merge_shape, set_infer_shape_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.join import _join_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_JOIN_GPU = "mx_ops.ops.join._join_gpu"

_KERNELS = _join_cpu.kernels()


def _axis(op, arg, axis, shape, what):
    """``axis`` normalized for ``shape``, or a ShapeError naming both."""
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"{op}: argument '{arg}' is {axis}, out of range for {what} of shape "
                         f"{tuple(shape)}")
    return axis % len(shape)


def _concat_shape(params, shapes):
    shapes = [tuple(s) for s in shapes]
    axis = _axis("Concat", "dim", params["dim"], shapes[0], "'arg0'")
    first = shapes[0][:axis] + shapes[0][axis + 1:]
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(shapes[0]) or s[:axis] + s[axis + 1:] != first:
            raise ShapeError(f"Concat: argument 'arg{i}' has shape {s}, which differs from "
                             f"'arg0' {shapes[0]} on an axis other than dim={params['dim']}")
    return [shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]]


def _concat_type(params, dtypes):
    for i, d in enumerate(dtypes[1:], 1):
        if d != dtypes[0]:
            raise TypeInferenceError(f"Concat: argument 'arg{i}' has dtype {d}, which differs "
                                     f"from 'arg0' {dtypes[0]}")
    return [dtypes[0]]


def _concat_pack(params, shapes):
    """mxop::JoinParam: the joined axis, normalized."""
    return struct.pack("=q", _axis("Concat", "dim", params["dim"], shapes[0], "'arg0'"))


register(OpDef(
    "Concat", arguments=("data",), key_var_num_args="num_args",
    input_docs={"data": "The arrays to join, alike but along 'dim'."},
    params={"num_args": Param("int", low=1, high=MAX_COUNT,
                              doc="Number of inputs to be concated."),
            "dim": Param("int", 1, doc="the dimension to be concated.")},
    infer_shape=_concat_shape, infer_type=_concat_type,
    compute=computes(_KERNELS["concat"], gpu_compute(_JOIN_GPU, "concat", _concat_pack)),
    pack_params=_concat_pack,
    aliases=("concat",),
    doc="Joins input arrays along a given axis; the other axes must match."))


def _split_shape(params, shapes):
    shape, n = tuple(shapes[0]), params["num_outputs"]
    axis = _axis("SliceChannel", "axis", params["axis"], shape, "'data'")
    if shape[axis] % n:
        raise ShapeError(f"SliceChannel: axis {params['axis']} of 'data' {shape} has size "
                         f"{shape[axis]}, which num_outputs={n} does not divide")
    if params["squeeze_axis"]:
        if shape[axis] != n:
            raise ShapeError(f"SliceChannel: squeeze_axis=True needs axis {params['axis']} of "
                             f"'data' {shape} to have size num_outputs={n}")
        part = shape[:axis] + shape[axis + 1:]
    else:
        part = shape[:axis] + (shape[axis] // n,) + shape[axis + 1:]
    return [part] * n


def _split_pack(params, shapes):
    """mxop::JoinParam: the split axis, normalized."""
    return struct.pack("=q", _axis("SliceChannel", "axis", params["axis"], shapes[0], "'data'"))


register(OpDef(
    "SliceChannel", arguments=("data",),
    outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
    params={"num_outputs": Param("int", low=1, high=MAX_COUNT,
                                 doc="Number of splits; must divide the axis."),
            "axis": Param("int", 1, doc="Axis along which to split."),
            "squeeze_axis": Param("bool", False, doc="Drop the split axis (its size must "
                                                     "equal num_outputs).")},
    infer_shape=_split_shape, infer_type=lambda p, t: [t[0]] * p["num_outputs"],
    compute=computes(_KERNELS["split"], gpu_compute(_JOIN_GPU, "split", _split_pack)),
    pack_params=_split_pack,
    aliases=("split",),
    doc="Splits an array along an axis into num_outputs equal parts."))


# --- Concat's backward: the output gradient split along the joined axis ----------------
def _concat_grad_shape(params, shapes):
    g, parts = tuple(shapes[0]), [tuple(s) for s in shapes[1:]]
    if not parts:
        raise ShapeError("_backward_Concat: needs the output gradient and at least one of the "
                         "forward inputs")
    want = _concat_shape({"dim": params["dim"]}, parts)[0]
    if g != want:
        raise ShapeError(f"_backward_Concat: argument 'arg0' (the output gradient) has shape "
                         f"{g}; the inputs {parts} concatenate to {want}")
    return parts


def _concat_grad_pack(params, shapes):
    """mxop::JoinParam: the joined axis, normalized for the output gradient."""
    return struct.pack("=q", _axis("_backward_Concat", "dim", params["dim"], shapes[0],
                                   "'arg0'"))


register(OpDef(
    "_backward_Concat", arguments=("data",), key_var_num_args="num_args",
    input_docs={"data": "The output gradient, then the forward's inputs (read for their "
                        "shapes only)."},
    outputs=lambda p: [f"output{i}" for i in range(p["num_args"] - 1)],
    params={"num_args": Param("int", low=2, high=MAX_COUNT,
                              doc="1 + the number of forward inputs."),
            "dim": Param("int", 1, doc="The forward's joined axis.")},
    infer_shape=_concat_grad_shape,
    infer_type=lambda p, t: [t[0]] * (p["num_args"] - 1),
    compute=computes(_KERNELS["split"], gpu_compute(_JOIN_GPU, "split", _concat_grad_pack)),
    pack_params=_concat_grad_pack,
    doc="Concat's gradient: the inputs are the output gradient, then the forward's inputs "
        "(read for their shapes only); output i is the output gradient's slice of input i."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

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


def _backward_concat(node, ograds):
    parts = node.inputs[1:]
    return ([apply("Concat", *ograds, dim=node.params["dim"])]
            + [zeros_like(x) for x in parts])


_GRADIENTS = {"Concat": _concat, "SliceChannel": _split, "_backward_Concat": _backward_concat}
for _name, _maker in _GRADIENTS.items():
    set_gradient(_name, _maker)


# --- partial inference (graph-level FInferShape: 0 = unknown) -----------------------
# Concat: every input and the output agree off the joined axis, in both
# directions; the output's joined size is the sum of the inputs' once all are
# known (an input's joined size is not inferred from the output's).
# SliceChannel: the outputs from the data, and the data back from any output.
def _concat(params, ins, outs):
    """ConcatShape, with one difference: an input of unknown rank leaves the
    output's joined size unknown (MXNet counts it as 0 there)."""
    common, total, unknown, source = None, 0, False, None
    slots = [(ins, i) for i in range(len(ins))] + [(outs, 0)]
    for side, i in slots:
        s = side[i]
        if s is None:
            unknown = unknown or side is ins
            continue
        axis = _axis("Concat", "dim", params["dim"], s, side.describe(i))
        if side is ins:
            total += s[axis]
            unknown = unknown or not s[axis]
        rest = s[:axis] + (0,) + s[axis + 1:]
        try:
            common = merge_shape(common, rest)
        except ValueError:
            raise ShapeError(f"Concat: {side.describe(i)} has shape {s}, which differs from "
                             f"{source} {common} on an axis other than "
                             f"dim={params['dim']}") from None
        source = source or side.describe(i)
    if common is None:
        return ins, outs
    for i in range(len(ins)):
        ins.assign(i, common, why=f"the shapes off axis dim={params['dim']}")
    if not unknown:
        common = common[:axis] + (total,) + common[axis + 1:]
    outs.assign(0, common, why=f"the inputs joined along dim={params['dim']}")
    return ins, outs


def _slice_channel(params, ins, outs):
    """SliceChannel's InferShape: each output is the data with its split
    axis divided by num_outputs (dropped with squeeze_axis); the data comes
    back from an output."""
    data = ins[0]
    if data is None:
        return ins, outs
    n, squeeze = params["num_outputs"], params["squeeze_axis"]
    axis = _axis("SliceChannel", "axis", params["axis"], data, "'data'")
    for _ in range(2):                   # again with what the outputs taught the data
        data = ins[0]
        size = data[axis]
        if size and size % n:
            raise ShapeError(f"SliceChannel: axis {params['axis']} of 'data' {data} has size "
                             f"{size}, which num_outputs={n} does not divide")
        if squeeze and size and size != n:
            raise ShapeError(f"SliceChannel: squeeze_axis=True needs axis {params['axis']} of "
                             f"'data' {data} to have size num_outputs={n}")
        part = data[:axis] + (() if squeeze else (size // n,)) + data[axis + 1:]
        for i in range(n):
            out = outs.assign(i, part, why=f"'data' {data} split {n} ways along axis "
                                           f"{params['axis']}")
            back = (out[:axis] + (n,) + out[axis:] if squeeze
                    else out[:axis] + (out[axis] * n,) + out[axis + 1:])
            ins.assign(0, back, why=f"{n} outputs of shape {out}")
    return ins, outs


set_infer_shape_partial("Concat", _concat)
set_infer_shape_partial("SliceChannel", _slice_channel)
