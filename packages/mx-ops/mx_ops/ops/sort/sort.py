"""Registrations of topk, sort and argsort (MXNet's ordering_op), their
gradients and partial type inference.

One kernel serves all three: sort is topk(ret_typ='value', k=n) with
is_ascend=True by default, argsort is topk(ret_typ='indices', k=n).  As in
MXNet, topk with ret_typ 'value' and sort have a second, hidden output (the
indices, which the gradient reads); the indices are written in the 'dtype'
parameter (float32 by default; sort's hidden ones in int64, exact).  k < 1 selects the
whole axis; axis=None works on the flattened array.  Ties keep the order
of their indices; NaN counts as the largest value."""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.node import NodeEntry
from mx_ops.core.partial_infer import set_infer_type_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.sort import _sort_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SORT_GPU = "mx_ops.ops.sort._sort_gpu"

_KERNELS = _sort_cpu.kernels()
_RET_TYPES = ("value", "indices", "mask", "both")          # mxop::TopKRet order
# MXNet's choices for the indices' dtype (topk, argsort).
_INDEX_DTYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")


def _resolve(op, params, shape):
    """(normalized axis or -1 for the flattened array, n, k): MXNet's
    ParseTopKParam, with its checks raised as ShapeError."""
    shape = tuple(shape)
    axis = params["axis"]
    if axis is None:
        n, a = math.prod(shape), -1
    else:
        if not -len(shape) <= axis < len(shape):
            raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for 'data' of "
                             f"shape {shape}")
        a = axis % len(shape)
        n = shape[a]
    k = params.get("k", 0)
    if k > n:
        raise ShapeError(f"{op}: argument 'k' is {k}, more than the {n} elements of axis "
                         f"{axis} of 'data' of shape {shape}")
    return a, n, (n if k < 1 else k)


def _topk_out_shape(op, params, shape):
    a, n, k = _resolve(op, params, shape)
    if a < 0:
        return (k,)
    return tuple(shape[:a]) + (k,) + tuple(shape[a + 1:])


def _pack(op, ret_typ):
    """mxop::TopKParam for a forward call (sort, argsort: a fixed ret_typ)."""
    def pack(params, shapes):
        a, _, k = _resolve(op, params, shapes[0])
        ret = ret_typ or params["ret_typ"]
        return struct.pack("=4q", a, k, _RET_TYPES.index(ret), int(params["is_ascend"]))
    return pack


def _outputs(ret_typ):
    """Output names: value and both have two (for value, the indices are
    hidden), indices and mask one."""
    return ("output0", "output1") if ret_typ in ("value", "both") else ("output",)


def _topk_shapes(params, shapes):
    ret = params["ret_typ"]
    if ret == "mask":
        _resolve("topk", params, shapes[0])
        return [tuple(shapes[0])]
    out = _topk_out_shape("topk", params, shapes[0])
    return [out] * len(_outputs(ret))


def _topk_types(params, dtypes):
    ret = params["ret_typ"]
    if ret == "indices":
        return [params["dtype"]]
    if ret == "mask":
        return [dtypes[0]]
    return [dtypes[0], params["dtype"]]


_AXIS = Param("int", -1, optional=True, doc="The axis to sort along; None works on the flattened array. "
                             "Negative values count from the end.")
_DTYPE = Param("dtype", "float32", choices=_INDEX_DTYPES,
               doc="The dtype of the indices it returns.")

register(OpDef(
    "topk", arguments=("data",), outputs=lambda p: _outputs(p["ret_typ"]),
    num_visible_outputs=lambda p: 2 if p["ret_typ"] == "both" else 1,
    params={"axis": _AXIS,
            "k": Param("int", 1, doc="How many elements to select along the axis; k < 1 "
                                     "selects all of them (a full sort)."),
            "ret_typ": Param("str", "indices", choices=_RET_TYPES,
                             doc="'value': the values; 'indices': their indices; 'mask': a "
                                 "0/1 array of the data's shape marking them; 'both': "
                                 "the values and the indices."),
            "is_ascend": Param("bool", False, doc="Select the smallest (True) or the "
                                                  "largest (False) elements."),
            "dtype": _DTYPE},
    infer_shape=_topk_shapes, infer_type=_topk_types,
    compute=computes(_KERNELS["topk"], gpu_compute(_SORT_GPU, "topk", _pack("topk", None))),
    pack_params=_pack("topk", None),
    doc="The k largest (or smallest) elements along an axis: their values, indices, a "
        "mask or both, in order (ties by index; NaN counts as the largest)."))

register(OpDef(
    "sort", arguments=("data",), outputs=("output0", "output1"), num_visible_outputs=1,
    params={"axis": _AXIS,
            "is_ascend": Param("bool", True, doc="Ascending (True) or descending order.")},
    infer_shape=lambda p, s: [_topk_out_shape("sort", p, s[0])] * 2,
    infer_type=lambda p, t: [t[0], "int64"],
    compute=computes(_KERNELS["topk"],
                     gpu_compute(_SORT_GPU, "topk", _pack("sort", "value"))),
    pack_params=_pack("sort", "value"),
    doc="The data sorted along an axis (stable; NaN counts as the largest)."))

register(OpDef(
    "argsort", arguments=("data",),
    params={"axis": _AXIS,
            "is_ascend": Param("bool", True, doc="Ascending (True) or descending order."),
            "dtype": _DTYPE},
    infer_shape=lambda p, s: [_topk_out_shape("argsort", p, s[0])],
    infer_type=lambda p, t: [p["dtype"]],
    compute=computes(_KERNELS["topk"],
                     gpu_compute(_SORT_GPU, "topk", _pack("argsort", "indices"))),
    pack_params=_pack("argsort", "indices"),
    doc="The indices that sort the data along an axis (stable: ties keep their order)."))


# --- the gradient --------------------------------------------------------------------

def _grad_pack(params, shapes):
    """mxop::TopKParam of the forward ('data' is the third input)."""
    return _pack("_backward_topk", "value")(params, [shapes[2]])


def _grad_shape(params, shapes):
    g, idx, data = (tuple(s) for s in shapes)
    want = _topk_out_shape("_backward_topk", params, data)
    if g != want or idx != want:
        raise ShapeError(f"_backward_topk: arguments 'ograd' {g} and 'indices' {idx} must "
                         f"have shape {want}, topk's output for 'data' of shape {data}")
    return [data]


register(OpDef(
    "_backward_topk", arguments=("ograd", "indices", "data"),
    params={"axis": _AXIS, "k": Param("int", 0, doc="The forward's k."),
            "is_ascend": Param("bool", False, doc="The forward's order (unused).")},
    infer_shape=_grad_shape, infer_type=lambda p, t: [t[0]], differentiable=False,
    compute=computes(_KERNELS["topk_backward"],
                     gpu_compute(_SORT_GPU, "topk_backward", _grad_pack)),
    pack_params=_grad_pack,
    doc="topk's (and sort's) gradient with respect to 'data' ('data' read for its shape "
        "only): zeros with each row's 'ograd' added at the indices the forward selected."))


def _value_grad(node, ograds):
    """sort and topk with ret_typ 'value' or 'both': the values' gradient goes
    back to where they came from (output 1 holds the indices); the indices
    and the mask have none, as in MXNet."""
    p = node.params
    if node.op.name == "topk" and p["ret_typ"] in ("indices", "mask"):
        return [zeros_like(node.inputs[0])]
    k = p.get("k", 0)
    return [apply("_backward_topk", ograds[0], NodeEntry(node, 1), node.inputs[0], axis=p["axis"],
                  k=k, is_ascend=p["is_ascend"])]


set_gradient("topk", _value_grad)
set_gradient("sort", _value_grad)
set_gradient("argsort", lambda node, ograds: [zeros_like(node.inputs[0])])


# --- partial inference: the data's dtype goes to the values (or the mask);
# the indices have the 'dtype' parameter's --------------------------------------------

def _type_rule(fixed_ret):
    def rule(params, ins, outs):
        ret = fixed_ret or params["ret_typ"]
        index_dtype = params.get("dtype", "int64")      # sort's hidden indices: int64
        if ret == "indices":
            outs.assign(0, index_dtype, why=f"argument 'dtype' is {index_dtype}")
            return ins, outs
        if ins[0] is not None:
            outs.assign(0, ins[0])
        elif outs[0] is not None:
            ins.assign(0, outs[0])
        if ret != "mask":
            outs.assign(1, index_dtype, why="the indices' dtype")
        return ins, outs
    return rule


set_infer_type_partial("topk", _type_rule(None))
set_infer_type_partial("sort", _type_rule("value"))
set_infer_type_partial("argsort", _type_rule("indices"))
