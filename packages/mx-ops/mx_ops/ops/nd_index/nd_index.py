"""Registrations of gather_nd, scatter_nd and _scatter_set_nd (MXNet's
names and argument order).  ``indices`` has shape (M, Y...): each of its
Y... columns is an index tuple into the first M axes of the addressed
array, whose remaining axes form the row it names.  NDArray indexing with
index arrays (``a[[0, 2], [1, 1]]``, ``a[idx] = v``) runs on them."""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.partial_infer import same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.nd_index import _nd_index_cpu
from mx_ops.ops.shape.shape import _strides

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_ND_INDEX_GPU = "mx_ops.ops.nd_index._nd_index_gpu"

_KERNELS = _nd_index_cpu.kernels()


def _tuples(op, indices, addressed):
    """M and the tuple shape Y, checked against the addressed shape."""
    indices, addressed = tuple(indices), tuple(addressed)
    if not indices or not 1 <= indices[0] <= len(addressed):
        raise ShapeError(f"{op}: argument 'indices' of shape {indices} must have a first axis "
                         f"M with 1 <= M <= {len(addressed)}, the axes of the addressed array "
                         f"{addressed}")
    return indices[0], indices[1:]


def _pack(indices, addressed):
    """mxop::NdIndexParam."""
    m, ys = indices[0], tuple(indices[1:])
    pad = [0] * (8 - m)
    return struct.pack("=3q8q8q", m, math.prod(ys), math.prod(addressed[m:]),
                       *(list(addressed[:m]) + pad), *(_strides(addressed)[:m] + pad))


def _gather_shape(params, shapes):
    data, indices = tuple(shapes[0]), tuple(shapes[1])
    m, ys = _tuples("gather_nd", indices, data)
    return [ys + data[m:]]


register(OpDef(
    "gather_nd", arguments=("data", "indices"), infer_shape=_gather_shape,
    input_docs={"indices": "Indices, (M, ...): row m indexes data's axis m."},
    infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["gather"], gpu_compute(_ND_INDEX_GPU, "gather")),
    pack_params=lambda p, s: _pack(tuple(s[1]), tuple(s[0])),
    doc="out[y, ...] = data[indices[0, y], ..., indices[M-1, y], ...]; the output has "
        "shape indices.shape[1:] + data.shape[M:]."))


def _rows_match(op, arg, rows, indices, target):
    m, ys = _tuples(op, indices, target)
    want = ys + tuple(target[m:])
    if tuple(rows) != want:
        raise ShapeError(f"{op}: argument '{arg}' has shape {tuple(rows)}; with 'indices' of "
                         f"shape {tuple(indices)} into {tuple(target)} it must be {want}")


def _scatter_shape(params, shapes):
    target = params["shape"]
    _rows_match("scatter_nd", "data", shapes[0], shapes[1], target)
    return [target]


register(OpDef(
    "scatter_nd", arguments=("data", "indices"),
    input_docs={"data": "The values to scatter, indices.shape[1:] + shape[M:].",
                "indices": "Indices, (M, ...): row m indexes the output's axis m."},
    params={"shape": Param("shape", doc="The output's shape.")},
    infer_shape=_scatter_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["scatter"], gpu_compute(_ND_INDEX_GPU, "scatter")),
    pack_params=lambda p, s: _pack(tuple(s[1]), p["shape"]),
    doc="Zeros of ``shape`` with out[indices[:, y]] = data[y] (the last duplicate wins)."))


def _scatter_set_shape(params, shapes):
    lhs = tuple(shapes[0])
    if params["shape"] and tuple(params["shape"]) != lhs:
        raise ShapeError(f"_scatter_set_nd: argument 'shape' {params['shape']} differs from "
                         f"'lhs' {lhs}")
    _rows_match("_scatter_set_nd", "rhs", shapes[1], shapes[2], lhs)
    return [lhs]


def _scatter_set_type(params, dtypes):
    if dtypes[1] != dtypes[0]:
        raise TypeInferenceError(f"_scatter_set_nd: argument 'rhs' has dtype {dtypes[1]}, "
                                 f"'lhs' {dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "_scatter_set_nd", arguments=("lhs", "rhs", "indices"),
    input_docs={"lhs": "The array to write into; the output is lhs with the writes (it may share "
                       "lhs's memory).",
                "rhs": "The values to write, indices.shape[1:] + lhs.shape[M:].",
                "indices": "Indices, (M, ...): row m indexes lhs's axis m."},
    params={"shape": Param("shape", (), doc="The shape of 'lhs' (as MXNet stores it).")},
    infer_shape=_scatter_set_shape, infer_type=_scatter_set_type,
    compute=computes(_KERNELS["scatter_set"],
                     gpu_compute(_ND_INDEX_GPU, "scatter_set")),
    pack_params=lambda p, s: _pack(tuple(s[2]), tuple(s[0])), inplace=((0, 0),),
    doc="``lhs`` with out[indices[:, y]] = rhs[y] (the last duplicate wins)."))


def _gather_grad_shape(params, shapes):
    g, indices, data = (tuple(s) for s in shapes)
    want = _gather_shape(params, [data, indices])[0]
    if g != want:
        raise ShapeError(f"_backward_gather_nd: argument 'ograd' has shape {g}; gather_nd of "
                         f"'data' {data} at 'indices' {indices} gives {want}")
    return [data]


def _gather_grad_type(params, dtypes):
    if dtypes[2] != dtypes[0]:
        raise TypeInferenceError(f"_backward_gather_nd: argument 'data' has dtype "
                                 f"{dtypes[2]}, 'ograd' {dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "_backward_gather_nd", arguments=("ograd", "indices", "data"),
    infer_shape=_gather_grad_shape, infer_type=_gather_grad_type,
    compute=computes(_KERNELS["gather_backward"],
                     gpu_compute(_ND_INDEX_GPU, "gather_backward")),
    pack_params=lambda p, s: _pack(tuple(s[1]), tuple(s[2])),
    doc="gather_nd's gradient with respect to 'data' (read for its shape only): zeros with "
        "out[indices[:, y]] += ograd[y] (duplicate tuples accumulate)."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

def _gather_nd(node, ograds):
    data, idx = node.inputs
    return [apply("_backward_gather_nd", ograds[0], idx, data), zeros_like(idx)]


def _scatter_nd(node, ograds):
    """MXNet's: gather_nd of g at the indices (zeros for the indices)."""
    idx = node.inputs[1]
    return [apply("gather_nd", ograds[0], idx), zeros_like(idx)]


def _scatter_set_nd(node, ograds):
    """out = lhs with rows set from rhs: lhs gets g with those rows zeroed,
    rhs gets g's rows.  (MXNet 1.x registers no gradient here.)"""
    g, (lhs, rhs, idx) = ograds[0], node.inputs
    return [apply("_scatter_set_nd", g, zeros_like(rhs), idx, shape=node.params["shape"]),
            apply("gather_nd", g, idx), zeros_like(idx)]


def _backward_gather_nd(node, ograds):
    g, idx, data = node.inputs
    return [apply("gather_nd", ograds[0], idx), zeros_like(idx), zeros_like(data)]


_GRADIENTS = {"gather_nd": _gather_nd, "scatter_nd": _scatter_nd, "_scatter_set_nd": _scatter_set_nd, "_backward_gather_nd": _backward_gather_nd}
for _name, _maker in _GRADIENTS.items():
    set_gradient(_name, _maker)


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------
# The data and the output share a dtype; the indices have their own (MXNet
# requires them known rather than guessing).
for _name in ("gather_nd", "scatter_nd"):
    set_infer_type_partial(_name, same_type(inputs=(0,)))
