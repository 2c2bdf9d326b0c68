"""dot with sparse operands: MXNet 1.9.1's storage rules of dot and
_backward_dot (DotForwardInferStorageType, DotBackwardInferStorageType)
and their sparse kernels (FComputeEx), as core.stype attributes.

Forward, on the CPU (tests/data/dot_mxnet191.json is MXNet's own table):
csr x dense/row_sparse -> dense; csr.T x dense/row_sparse -> row_sparse
(dense with forward_stype='default'); dense x csr -> csr (dense with
forward_stype='default'); dense x csr.T -> dense with
forward_stype='default'.  Every other combination falls back to dense
(with MXNet's log), giving forward_stype's storage where one is asked.
_backward_dot gives the dense rhs of dot(csr, W) a row_sparse gradient,
dot(csr.T, ograd).

The drivers below are one body for both devices: ``k`` is the kernel
module (_dot_sparse_cpu, or the CuPy twin _dot_sparse_gpu, which offer
the same functions) and the blobs' ``xp`` is NumPy or CuPy."""
import math

from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               SparseBlob, set_storage_inference)
from mx_ops.ops.dot import _dot_sparse_cpu
from mx_ops.ops.dot.dot import DOT_PARAMS, dot_shape, float_types

_SPARSE_GPU = "mx_ops.ops.dot._dot_sparse_gpu"
_EX = DISPATCH_COMPUTE_EX


def _stype(x):
    return x.stype if isinstance(x, SparseBlob) else "default"


# --- storage rules --------------------------------------------------------------------
def dot_storage(params, in_stypes, device):
    """MXNet's DotForwardInferStorageType: (out stypes, dispatch mode).  A
    combination with a kernel for other flags or hints falls back with the
    output storage that kernel's rule named (dense x csr.T: csr)."""
    lhs, rhs = in_stypes
    ta, tb = params["transpose_a"], params["transpose_b"]
    hint = params.get("forward_stype")
    target = hint
    if lhs == rhs == "default":
        target = hint or "default"
        if target == "default":
            return ["default"], DISPATCH_COMPUTE
    elif lhs == "csr" and rhs in ("default", "row_sparse") and not tb:
        target = hint or ("row_sparse" if ta else "default")
        if target == "default" or (ta and target == "row_sparse"):
            return [target], _EX                         # csr(.T) x dns/rsp
    elif lhs == "default" and rhs == "csr" and not ta:
        target = hint or "csr"
        if target == "default":
            return ["default"], _EX                      # dns x csr(.T) -> dns
        if target == "csr" and not tb and device == "cpu":
            return ["csr"], _EX                          # dns x csr -> csr, CPU only
    return [target or "default"], DISPATCH_FALLBACK


def backward_dot_storage(params, in_stypes, device):
    """MXNet's DotBackwardInferStorageType over (ograd, lhs, rhs): the
    gradient of a dense rhs of dot(csr, rhs) is row_sparse."""
    del device
    ograd, lhs, rhs = in_stypes
    ta, tb = params["transpose_a"], params["transpose_b"]
    if ograd == lhs == rhs == "default":
        return ["default", "default"], DISPATCH_COMPUTE
    if lhs == "csr" and ograd in ("default", "row_sparse") and not tb:
        return ["default", "default" if ta else "row_sparse"], _EX
    if not ta and lhs == "default" and rhs == "csr" and ograd == "default":
        return ["default", "default"], _EX
    return ["default", "default"], DISPATCH_FALLBACK


# --- operands -------------------------------------------------------------------------
def _csr_parts(blob, name, dtype):
    """(data, indptr, indices) of a csr operand, its indptr checked (the
    kernels check each column index as they read it)."""
    xp = blob.xp
    ip, ix = blob.indptr, blob.indices
    nnz = blob.data.shape[0]
    if (ip.shape[0] != blob.shape[0] + 1 or ix.shape[0] < nnz or int(ip[0]) != 0
            or int(ip[-1]) != nnz or bool((xp.diff(ip) < 0).any())):
        raise ValueError(f"dot: argument '{name}' is a malformed csr array (indptr must start "
                         f"at 0, never decrease and end at the {nnz} stored values; "
                         f"check_format names the position)")
    return (xp.ascontiguousarray(blob.data, dtype), xp.ascontiguousarray(ip, "int64"),
            xp.ascontiguousarray(ix, "int64"))


def _rows_of(x, name, dtype):
    """(B, row_map): a dense or row_sparse operand as rows of a 2-D matrix,
    with row_map (one int64 per logical row: its stored row, or -1) for a
    row_sparse one."""
    if not isinstance(x, SparseBlob):
        return matrix(x).astype(dtype, copy=False), None   # C-contiguous
    xp = x.xp
    idx = x.indices
    rows = x.shape[0]
    if x.data.shape[0] != idx.shape[0] or bool(((idx < 0) | (idx >= rows)).any()):
        raise ValueError(f"dot: argument '{name}' is a malformed row_sparse array (its row "
                         f"indices must lie in [0, {rows}); check_format names the position)")
    row_map = xp.full(rows, -1, dtype=idx.dtype)
    row_map[idx] = xp.arange(idx.shape[0], dtype=idx.dtype)
    return matrix(xp.ascontiguousarray(x.data, dtype)), row_map


def _bad_index(name, bound):
    return IndexError(f"dot: argument '{name}' (csr) has a column index outside [0, {bound}) "
                      f"(check_format names the position)")


def matrix(x, rows_axes=1):
    """``x`` as a 2-D view: its first ``rows_axes`` axes as rows, the rest as
    columns (empty arrays included, which reshape(-1) refuses)."""
    return x.reshape(math.prod(x.shape[:rows_axes]), math.prod(x.shape[rows_axes:]))


# --- forward ----------------------------------------------------------------------------
def _csr_lhs(k, lhs, rhs, ta, out, add):
    """dot(csr, rhs) and dot(csr.T, rhs), rhs dense or row_sparse."""
    dtype = out.dtype
    data, ip, ix = _csr_parts(lhs, "lhs", dtype)
    B, row_map = _rows_of(rhs, "rhs", dtype)
    cols = lhs.shape[1]
    if not ta:
        if not k.csr_times_dense(data, ip, ix, cols, B, matrix(out), add, None, row_map):
            raise _bad_index("lhs", cols)
        return
    # csr.T: a count pass (the columns with entries, which are the rows a
    # row_sparse output keeps; every index checked), then the scatter.
    kept = k.columns_with_entries(ip, ix, cols, row_map)
    if kept is None:
        raise _bad_index("lhs", cols)
    if not isinstance(out, SparseBlob):
        k.csr_t_times_dense(data, ip, ix, cols, B, matrix(out), add, None, row_map)
        return
    if add:
        raise ValueError("dot: req 'add' into a row_sparse output is not supported")
    out.alloc_rsp(int(kept.shape[0]))
    out.indices[...] = kept
    k.csr_t_times_dense(data, ip, ix, cols, B, matrix(out.data), False, kept, row_map)


def _csr_rhs(k, lhs, rhs, tb, out, add):
    """dot(dense, csr) (dense or csr out) and dot(dense, csr.T)."""
    dtype = out.dtype
    xp = rhs.xp
    data, ip, ix = _csr_parts(rhs, "rhs", dtype)
    A = matrix(xp.ascontiguousarray(lhs, dtype), lhs.ndim - 1)
    cols = rhs.shape[1]
    if tb:
        if not k.dense_times_csr_t(A, data, ip, ix, matrix(out), add):
            raise _bad_index("rhs", A.shape[1])
        return
    if not isinstance(out, SparseBlob):
        if not k.dense_times_csr(A, data, ip, ix, cols, matrix(out), add):
            raise _bad_index("rhs", cols)
        return
    if add:
        raise ValueError("dot: req 'add' into a csr output is not supported")
    # MXNet's DotDnsCsrCsrImpl: every output row stores the union of the
    # csr's columns.
    used = xp.unique(ix[:data.shape[0]])
    if used.shape[0] and (int(used[0]) < 0 or int(used[-1]) >= cols):
        raise _bad_index("rhs", cols)
    n, m = int(used.shape[0]), A.shape[0]
    col_map = xp.full(cols, -1, dtype=ix.dtype)
    col_map[used] = xp.arange(n, dtype=ix.dtype)
    out.alloc_csr(m * n)
    out.indptr[...] = xp.arange(m + 1, dtype=ix.dtype) * n
    out.indices[...] = xp.tile(used, m)
    k.dense_times_csr(A, data, ip, ix, cols, out.data.reshape(m, n), False, col_map)


def dot_forward(k):
    """dot's sparse compute over kernel module ``k``."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        lhs, rhs = inputs
        out, add = outputs[0], reqs[0] == "add"
        if out.dtype.name not in ("float32", "float64"):
            raise TypeError(f"dot: dtype {out.dtype} is not supported with sparse inputs "
                            f"(MXNet 1.9.1: float32 and float64 only)")
        if _stype(lhs) == "csr":
            _csr_lhs(k, lhs, rhs, params["transpose_a"], out, add)
        else:
            _csr_rhs(k, lhs, rhs, params["transpose_b"], out, add)
    return run


# --- backward ---------------------------------------------------------------------------
def _densify(x):
    if not isinstance(x, SparseBlob):
        return x
    xp = x.xp
    out = xp.zeros(x.shape, x.dtype)
    if x.stype == "row_sparse":
        out[x.indices] = x.data
    else:
        nnz = x.data.shape[0]
        rows = xp.searchsorted(x.indptr, xp.arange(nnz), side="right") - 1
        out[rows, x.indices[:nnz]] = x.data
    return out


def _store(out, value, req):
    if req == "add":
        out += value.astype(out.dtype, copy=False)
    else:
        out[...] = value


def backward_dot(k):
    """_backward_dot's sparse compute: (ograd, lhs, rhs) -> (lhs_grad,
    rhs_grad).  The csr operand's own gradient, which MXNet leaves
    unwritten, is the dense product here when asked for (req not
    'null')."""
    forward = dot_forward(k)

    def run(params, inputs, outputs, reqs):
        ograd, lhs, rhs = inputs
        ta, tb = params["transpose_a"], params["transpose_b"]
        if _stype(lhs) == "csr":
            # d rhs = dot(lhs, ograd) with lhs transposed the other way.
            forward({"transpose_a": not ta, "transpose_b": False}, [lhs, ograd],
                    [outputs[1]], [reqs[1]])
            if reqs[0] != "null":
                g, r = _densify(ograd), _densify(rhs)
                _store(outputs[0], r @ g.T if ta else g @ r.T, reqs[0])
        else:
            # d lhs = dot(ograd, rhs) with rhs transposed the other way.
            forward({"transpose_a": False, "transpose_b": not tb}, [ograd, rhs],
                    [outputs[0]], [reqs[0]])
            if reqs[1] != "null":
                a = matrix(lhs, lhs.ndim - 1)
                _store(outputs[1], ograd.T @ a if tb else a.T @ ograd, reqs[1])
    return run


def _backward_dense(params, inputs, outputs, reqs):
    """All dense: the two products of dot's gradient (its dense kernel)."""
    from mx_ops.core._invoke import invoke      # (not at import: the registry is filling)
    ograd, lhs, rhs = inputs
    ta, tb = params["transpose_a"], params["transpose_b"]
    grads = (
        (rhs, ograd, dict(transpose_a=tb, transpose_b=True)) if ta
        else (ograd, rhs, dict(transpose_b=not tb)),
        (ograd, lhs, dict(transpose_a=True, transpose_b=ta)) if tb
        else (lhs, ograd, dict(transpose_a=not ta)))
    for (a, b, flags), out, req in zip(grads, outputs, reqs):
        if req != "null":
            invoke("dot", [a, b], out=out, req="add" if req == "add" else "write", **flags)


def _backward_shape(params, shapes):
    ograd, lhs, rhs = (tuple(s) for s in shapes)
    want = dot_shape(lhs, rhs, params["transpose_a"], params["transpose_b"])
    if ograd != want:
        raise ShapeError(f"_backward_dot: argument 'ograd' has shape {ograd}, but dot of lhs "
                         f"{lhs} and rhs {rhs} (transpose_a={params['transpose_a']}, "
                         f"transpose_b={params['transpose_b']}) gives {want}")
    return [lhs, rhs]


def _backward_types(params, dtypes):
    float_types("_backward_dot")(params, dtypes[1:])
    return [dtypes[1], dtypes[2]]


register(OpDef(
    "_backward_dot", arguments=("ograd", "lhs", "rhs"), outputs=("lhs_grad", "rhs_grad"),
    input_docs={"ograd": "The gradient of dot's output.", "lhs": "dot's lhs.",
                "rhs": "dot's rhs."},
    params=DOT_PARAMS, infer_shape=_backward_shape, infer_type=_backward_types,
    compute=computes(_backward_dense, _backward_dense), differentiable=False,
    doc="The gradients of dot's lhs and rhs from the output's gradient (with a csr lhs, "
        "the rhs gradient is row_sparse: dot(csr.T, ograd))."))

# Dense inputs give a sparse output only when forward_stype asks for one:
# only those calls take the storage dispatch.
set_storage_inference("dot", dot_storage, computes(
    dot_forward(_dot_sparse_cpu), gpu_compute(_SPARSE_GPU, "forward")),
    sparse_from_dense=lambda params: params.get("forward_stype") in ("row_sparse", "csr"))
set_storage_inference("_backward_dot", backward_dot_storage, computes(
    backward_dot(_dot_sparse_cpu), gpu_compute(_SPARSE_GPU, "backward")))
