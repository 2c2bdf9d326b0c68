"""Sparse kernels of operators (MXNet's FComputeEx with FInferStorageType):
the zero-preserving unary and scalar operators (the storage type is kept:
the dense kernel runs on the stored values), _square_sum, _sparse_retain
and the row_sparse union of elemwise_add/sub (binary.py has the binary
operators' rules).  Anything else falls back to dense
(core.stype.default_storage)."""
import numpy as np

from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, computes, register
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               set_storage_inference)
from mx_ops.ops.sparse import _sparse_cpu
from mx_ops.ops.sparse.cast_storage import blob_stype


def _dense(in_stypes):
    return all(s == "default" for s in in_stypes)


# --- row_sparse +/- row_sparse (binary.py's rule picks it) --------------------------
def rsp_union(a, b, sign, out):
    """row_sparse ``out`` = a + sign * b: the union of the kept rows."""
    xp = out.xp
    idx = xp.unique(xp.concatenate([a.indices, b.indices]))
    out.alloc_rsp(int(idx.shape[0]))
    out.indices[...] = idx
    out.data[...] = 0
    out.data[xp.searchsorted(idx, a.indices)] += a.data.astype(out.dtype, copy=False)
    rows = xp.searchsorted(idx, b.indices)
    if sign > 0:
        out.data[rows] += b.data.astype(out.dtype, copy=False)
    else:
        out.data[rows] -= b.data.astype(out.dtype, copy=False)


# --- zero-preserving unary and scalar operators ---------------------------------------
# f(0) == 0 for each, so the dense kernel on the stored values is the
# sparse result (MXNet's *_WITH_SPARSE / UnaryOp::ComputeEx).
ZERO_PRESERVING = (
    "abs", "sign", "sqrt", "square", "relu", "negative", "sin", "sinh", "tan", "tanh",
    "arcsin", "arcsinh", "arctan", "arctanh", "ceil", "floor", "rint", "round", "trunc", "fix",
    "expm1", "log1p", "degrees", "radians", "_copy", "_mul_scalar", "_div_scalar")


def _unary_storage(params, in_stypes, device):
    del params, device
    if _dense(in_stypes):
        return ["default"], DISPATCH_COMPUTE
    return [in_stypes[0]], DISPATCH_COMPUTE_EX


def on_values(op_name):
    """The sparse kernel of ``op_name``: its registered dense kernel on the
    stored values (mx_ops.invoke: NumPy or CuPy), the indices copied."""
    from mx_ops.core._invoke import invoke

    def run(params, inputs, outputs, reqs):
        del reqs
        src, dst = inputs[0], outputs[0]
        xp = dst.xp
        values = {k: v for k, v in params.items() if not k.startswith("_")}
        dst.data = xp.ascontiguousarray(invoke(op_name, [src.data], **values))
        dst.indices = xp.array(src.indices)
        dst.indptr = None if src.indptr is None else xp.array(src.indptr)
    return run


for _name in ZERO_PRESERVING:
    _fn = on_values(_name)
    set_storage_inference(_name, _unary_storage, {"cpu": _fn, "gpu": _fn})


# --- _square_sum -------------------------------------------------------------------------
_REDUCE_PARAMS = {
    "axis": Param("shape", None, doc="The axis (or axes) to reduce; None reduces all."),
    "keepdims": Param("bool", False, doc="Keep the reduced axes with size 1."),
    "exclude": Param("bool", False, doc="Reduce the axes not in 'axis'."),
}


def _axes(params, ndim, api="_square_sum"):
    axis = params["axis"]
    if axis is None or len(axis) == 0:
        axes = tuple(range(ndim))
    else:
        axes = []
        for a in axis:
            if not -ndim <= a < ndim:
                raise ShapeError(f"{api}: axis {a} is out of range for a {ndim}-d input")
            axes.append(a % ndim)
        axes = tuple(sorted(set(axes)))
    if params["exclude"]:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def _square_sum_shape(params, shapes):
    shape = tuple(shapes[0])
    axes = _axes(params, len(shape))
    if params["keepdims"]:
        return [tuple(1 if i in axes else s for i, s in enumerate(shape))]
    out = tuple(s for i, s in enumerate(shape) if i not in axes)
    return [out or (1,)]            # MXNet: reducing every axis gives shape (1,)


def _square_sum_dense(params, inputs, outputs, reqs):
    """The dense kernel (NumPy or CuPy): sum(x * x) over the axes, in the
    input's dtype (integers wrap)."""
    if reqs[0] == "null":
        return
    x = inputs[0]
    out = outputs[0]
    axes = _axes(params, x.ndim)
    sums = (x * x).sum(axis=axes, dtype=x.dtype).reshape(out.shape)
    if reqs[0] == "add":
        out += sums
    else:
        out[...] = sums


def _square_sum_storage(params, in_stypes, device):
    """MXNet's SquareSumForwardInferStorageType: a 2-D row_sparse input
    summed over axis 1 with keepdims stays row_sparse, over axis 0 or 1
    otherwise gives dense, by the sparse kernel."""
    del device
    if _dense(in_stypes):
        return ["default"], DISPATCH_COMPUTE
    axis = params["axis"]
    if in_stypes[0] == "row_sparse" and axis is not None and len(axis) == 1 \
            and not params["exclude"] and axis[0] in (0, 1, -1):
        keep_rsp = axis[0] in (1, -1) and params["keepdims"]
        return ["row_sparse" if keep_rsp else "default"], DISPATCH_COMPUTE_EX
    return ["default"], DISPATCH_FALLBACK


def _square_sum_rsp(params, inputs, outputs, reqs):
    """Row sums over the kept rows (axis 1) or column sums (axis 0)."""
    del reqs
    src, dst = inputs[0], outputs[0]
    if len(src.shape) != 2:
        raise ShapeError(f"_square_sum: a row_sparse input must be 2-D, got shape {src.shape}")
    data = src.data
    axis = params["axis"][0] % 2
    sums = (data * data).sum(axis=axis)
    if blob_stype(dst) == "row_sparse":
        xp = dst.xp
        dst.data = xp.ascontiguousarray(sums.reshape(-1, 1).astype(dst.dtype, copy=False))
        dst.indices = xp.array(src.indices)
        return
    flat = dst.reshape(-1)
    flat[...] = 0
    if axis == 0:
        flat[...] = sums.astype(dst.dtype, copy=False)
    else:
        flat[src.indices] = sums.astype(dst.dtype, copy=False)


register(OpDef(
    "_square_sum", arguments=("data",), input_docs={"data": "The input"},
    params=_REDUCE_PARAMS, infer_shape=_square_sum_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_square_sum_dense, _square_sum_dense), differentiable=False,
    doc="The sum of the squares of the elements over the given axes (for row_sparse "
        "inputs without densifying them)."))
set_storage_inference("_square_sum", _square_sum_storage,
                      {"cpu": _square_sum_rsp, "gpu": _square_sum_rsp})


# --- _sparse_retain ----------------------------------------------------------------------
def _retain_shape(params, shapes):
    if len(shapes[1]) != 1:
        raise ShapeError(f"_sparse_retain: argument 'indices' must be 1-D, got shape "
                         f"{tuple(shapes[1])}")
    return [tuple(shapes[0])]


def _retain_storage(params, in_stypes, device):
    del params, device
    if in_stypes[0] != "row_sparse" or in_stypes[1] != "default":
        raise ValueError(f"_sparse_retain: 'data' must be row_sparse and 'indices' dense, got "
                         f"{in_stypes[0]} and {in_stypes[1]}")
    return ["row_sparse"], DISPATCH_COMPUTE_EX


def _retain(params, inputs, outputs, reqs):
    """MXNet's sparse_retain: the output keeps exactly the requested rows
    (sorted), with the input's values where it stores them, else zeros."""
    del params, reqs
    src, idx, dst = inputs[0], inputs[1], outputs[0]
    xp = dst.xp
    rows = xp.unique(idx.astype(np.int64))
    if rows.shape[0] and (int(rows[0]) < 0 or int(rows[-1]) >= src.shape[0]):
        raise IndexError(f"_sparse_retain: an index in 'indices' is out of range [0, "
                         f"{src.shape[0]})")
    dst.alloc_rsp(int(rows.shape[0]))
    dst.indices[...] = rows
    dst.data[...] = 0
    if src.indices.shape[0]:
        at = xp.searchsorted(src.indices, rows)
        at_c = xp.minimum(at, src.indices.shape[0] - 1)
        found = src.indices[at_c] == rows
        dst.data[found] = src.data[at_c[found]].astype(dst.dtype, copy=False)


def _no_dense_retain(params, inputs, outputs, reqs):
    raise ValueError("_sparse_retain: 'data' must be row_sparse")


register(OpDef(
    "_sparse_retain", arguments=("data", "indices"),
    input_docs={"data": "The input array for sparse_retain operator.",
                "indices": "The index array of rows ids that will be retained."},
    infer_shape=_retain_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_no_dense_retain, None), differentiable=False,
    doc="Pick rows specified by user input index array from a row sparse matrix and save "
        "them in the output sparse matrix."))
set_storage_inference("_sparse_retain", _retain_storage, {"cpu": _retain, "gpu": _retain})
