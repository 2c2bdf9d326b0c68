"""The CPU kernels of the sparse operators (sparse_ops_cpu.h) over NumPy
arrays and SparseBlobs, run without the GIL.  Each checks a sparse input's
format first (kernels index memory with it); sparse_ops.py's rules pick
which runs.  Kernels allocate their sparse outputs between the count and
fill passes, as cast_storage does."""
from libc.stdint cimport int64_t
from libcpp.vector cimport vector

import numpy as np

from mx_ops.ops.sparse._sparse_cpu import require_csr, require_rsp
from mx_ops.core.dtypes import DTYPE_FLAGS

# The kernels as k_<name> (the def wrappers below take the plain names).
cdef extern from "sparse_ops_cpu.h" nogil:
    int k_csr_dense_op "mxop::sparse::csr_dense_op"(int dtype, int op, const void* values,
        const int64_t* indptr, const int64_t* indices, int64_t rows, const void* dense, int64_t rs,
        int64_t cs, void* out)
    int k_csr_scatter_add "mxop::sparse::csr_scatter_add"(int dtype, const void* values,
        const int64_t* indptr, const int64_t* indices, int64_t rows, int64_t cols, int sign,
        void* out)
    int k_rsp_scatter_add "mxop::sparse::rsp_scatter_add"(int dtype, const void* values,
        const int64_t* indices, int64_t kept, int64_t width, int sign, void* out)
    int64_t k_sorted_intersect "mxop::sparse::sorted_intersect"(const int64_t* a, int64_t na,
        const int64_t* b, int64_t nb, int64_t* ia, int64_t* ib)
    int k_rows_op "mxop::sparse::rows_op"(int dtype, int op, const void* a, const int64_t* ra,
        const void* b, const int64_t* rb, int64_t n, int64_t width, void* out)
    int64_t k_csr_intersect_count "mxop::sparse::csr_intersect_count"(const int64_t* ap,
        const int64_t* ai, const int64_t* bp, const int64_t* bi, int64_t rows, int64_t cost,
        int64_t* indptr)
    int k_csr_intersect_fill "mxop::sparse::csr_intersect_fill"(int dtype, const void* av,
        const int64_t* ap, const int64_t* ai, const void* bv, const int64_t* bp, const int64_t* bi,
        int64_t rows, int64_t cost, const int64_t* indptr, int64_t* indices, void* data)
    int64_t k_rsp_sum_merge "mxop::sparse::rsp_sum_merge"(const int64_t* const* indices,
        const int64_t* kept, int n, const int64_t* off, int64_t* out_indices, int64_t* pos)
    int k_rsp_sum_fill "mxop::sparse::rsp_sum_fill"(int dtype, const void* const* values,
        const int64_t* kept, int n, int64_t rows_out, int64_t width, const int64_t* off,
        const int64_t* pos, void* out)
    int k_csr_reduce "mxop::sparse::csr_reduce"(int dtype, const void* values,
        const int64_t* indptr, const int64_t* indices, int64_t rows, int64_t cols, int axis,
        int square, double* out)
    int64_t k_csr_slice_count "mxop::sparse::csr_slice_count"(const int64_t* ip, const int64_t* ix,
        int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t* indptr, int64_t* first)
    int k_csr_slice_fill "mxop::sparse::csr_slice_fill"(int dtype, const void* values,
        const int64_t* ix, int64_t rows, int64_t c0, const int64_t* indptr, const int64_t* first,
        int64_t* indices, void* data)
    int k_csr_where "mxop::sparse::csr_where"(int cond_dtype, const void* cond,
        const int64_t* indptr, const int64_t* indices, int64_t rows, int64_t cols, int dtype,
        const void* x, void* out)

_INT64 = np.dtype("int64")
OPS = {"mul": 0, "div": 1}


cdef inline void* _ptr(a):
    return <void*><size_t>a.__array_interface__["data"][0]


cdef inline int64_t* _iptr(a):
    return <int64_t*><size_t>a.__array_interface__["data"][0]


cdef int _dtype(a) except -1:
    flag = DTYPE_FLAGS.get(a.dtype.name, -1)
    if flag < 0:
        raise TypeError(f"sparse kernel: dtype {a.dtype} is not supported")
    return flag


def _values(blob, dtype):
    return np.ascontiguousarray(blob.data, dtype)


def csr_dense_op(a, dense, str op, out, str api):
    """csr SparseBlob ``out`` = csr ``a`` (op) ``dense`` broadcast to a's
    shape (2-D, each axis a's size or 1); out keeps a's entries."""
    require_csr(a, api)
    v = _values(a, out.dtype)
    d = np.ascontiguousarray(dense, out.dtype)
    cdef int64_t rows = a.shape[0]
    cdef int64_t rs = d.shape[1] if d.shape[0] != 1 else 0
    cdef int64_t cs = 1 if d.shape[1] != 1 else 0
    out.alloc_csr(v.shape[0], a.indptr.copy())
    out.indices[...] = a.indices[:v.shape[0]]
    cdef int dt = _dtype(v), code = OPS[op]
    cdef void* vp = _ptr(v)
    cdef void* dp = _ptr(d)
    cdef void* op_ = _ptr(out.data)
    cdef int64_t* ip = _iptr(a.indptr)
    cdef int64_t* ix = _iptr(a.indices)
    with nogil:
        k_csr_dense_op(dt, code, vp, ip, ix, rows, dp, rs, cs, op_)


def csr_scatter_add(a, int sign, out, str api):
    """Dense C-contiguous ``out`` += sign * csr ``a``."""
    require_csr(a, api)
    v = _values(a, out.dtype)
    cdef int dt = _dtype(v)
    cdef int64_t rows = a.shape[0], cols = a.shape[1]
    cdef void* vp = _ptr(v)
    cdef void* op_ = _ptr(out)
    cdef int64_t* ip = _iptr(a.indptr)
    cdef int64_t* ix = _iptr(a.indices)
    with nogil:
        k_csr_scatter_add(dt, vp, ip, ix, rows, cols, sign, op_)


def rsp_scatter_add(a, int sign, out, str api):
    """Dense C-contiguous ``out`` += sign * row_sparse ``a``."""
    require_rsp(a, api)
    v = _values(a, out.dtype)
    cdef int dt = _dtype(v)
    cdef int64_t kept = v.shape[0], width = out.size // out.shape[0] if out.shape[0] else 0
    cdef void* vp = _ptr(v)
    cdef void* op_ = _ptr(out)
    cdef int64_t* ix = _iptr(a.indices)
    with nogil:
        k_rsp_scatter_add(dt, vp, ix, kept, width, sign, op_)


def rsp_rsp_mul(a, b, out, str api):
    """row_sparse ``out`` = a * b on the rows both keep."""
    require_rsp(a, api)
    require_rsp(b, api)
    av, bv = _values(a, out.dtype), _values(b, out.dtype)
    cdef int64_t na = a.indices.shape[0], nb = b.indices.shape[0], n
    ia = np.empty(min(na, nb), _INT64)
    ib = np.empty(min(na, nb), _INT64)
    cdef int64_t* pa = _iptr(a.indices)
    cdef int64_t* pb = _iptr(b.indices)
    cdef int64_t* qa = _iptr(ia)
    cdef int64_t* qb = _iptr(ib)
    with nogil:
        n = k_sorted_intersect(pa, na, pb, nb, qa, qb)
    out.alloc_rsp(n)
    out.indices[...] = a.indices[ia[:n]]
    _rows_op(av, ia, bv, ib, n, out)


def rsp_dense_mul(a, dense, out, str api):
    """row_sparse ``out`` = a * dense (dense of a's shape) on a's rows."""
    require_rsp(a, api)
    av = _values(a, out.dtype)
    d = np.ascontiguousarray(dense, out.dtype)
    out.alloc_rsp(av.shape[0])
    out.indices[...] = a.indices
    _rows_op(av, None, d, a.indices, av.shape[0], out)


cdef _rows_op(a, ra, b, rb, int64_t n, out):
    cdef int dt = _dtype(a)
    cdef int64_t width = out.data.size // n if n else 0
    cdef void* ap = _ptr(a)
    cdef void* bp = _ptr(b)
    cdef int64_t* rap = _iptr(ra) if ra is not None else NULL
    cdef int64_t* rbp = _iptr(rb)
    cdef void* op_ = _ptr(out.data)
    with nogil:
        k_rows_op(dt, 0, ap, rap, bp, rbp, n, width, op_)


def csr_csr_mul(a, b, out, str api):
    """csr ``out`` = a * b on the entries both store."""
    require_csr(a, api)
    require_csr(b, api)
    av, bv = _values(a, out.dtype), _values(b, out.dtype)
    cdef int64_t rows = out.shape[0], nnz
    cdef int64_t cost = (av.shape[0] + bv.shape[0]) // rows + 1 if rows else 1
    cdef int dt = _dtype(av)
    indptr = np.empty(rows + 1, _INT64)
    cdef int64_t* ap = _iptr(a.indptr)
    cdef int64_t* ai = _iptr(a.indices)
    cdef int64_t* bp = _iptr(b.indptr)
    cdef int64_t* bi = _iptr(b.indices)
    cdef int64_t* p = _iptr(indptr)
    cdef void* x = _ptr(av)
    cdef void* y = _ptr(bv)
    with nogil:
        nnz = k_csr_intersect_count(ap, ai, bp, bi, rows, cost, p)
    out.alloc_csr(nnz, indptr)
    cdef int64_t* idx = _iptr(out.indices)
    cdef void* data = _ptr(out.data)
    with nogil:
        k_csr_intersect_fill(dt, x, ap, ai, y, bp, bi, rows, cost, p, idx, data)


def rsp_sum(blobs, out, str api):
    """row_sparse ``out`` = the sum of row_sparse ``blobs`` (add_n)."""
    for b in blobs:
        require_rsp(b, api)
    values = [_values(b, out.dtype) for b in blobs]
    cdef int n = len(blobs), i
    cdef int64_t total = 0, rows_out
    cdef int64_t width = int(np.prod(out.shape[1:], dtype=np.int64))
    cdef vector[const void*] vp
    cdef vector[const int64_t*] ip
    cdef vector[int64_t] kept, off
    for i in range(n):
        vp.push_back(_ptr(values[i]))
        ip.push_back(_iptr(blobs[i].indices))
        kept.push_back(blobs[i].indices.shape[0])
        off.push_back(total)
        total += kept[i]
    merged = np.empty(total, _INT64)
    pos = np.empty(total, _INT64)
    cdef int64_t* mp = _iptr(merged)
    cdef int64_t* pp = _iptr(pos)
    with nogil:
        rows_out = k_rsp_sum_merge(ip.data(), kept.data(), n, off.data(), mp, pp)
    out.alloc_rsp(rows_out)
    out.indices[...] = merged[:rows_out]
    cdef int dt = _dtype(out.data)
    cdef void* od = _ptr(out.data)
    with nogil:
        k_rsp_sum_fill(dt, vp.data(), kept.data(), n, rows_out, width, off.data(), pp, od)


def csr_reduce(a, int axis, bint square, str api):
    """Per-row (axis 1) or per-column (axis 0) sums of csr ``a``'s values
    (squared with ``square``), as float64."""
    require_csr(a, api)
    v = np.ascontiguousarray(a.data)
    cdef int dt = _dtype(v)
    cdef int64_t rows = a.shape[0], cols = a.shape[1]
    res = np.empty(rows if axis == 1 else cols, np.float64)
    cdef void* vp = _ptr(v)
    cdef int64_t* ip = _iptr(a.indptr)
    cdef int64_t* ix = _iptr(a.indices)
    cdef double* rp = <double*>_ptr(res)
    with nogil:
        k_csr_reduce(dt, vp, ip, ix, rows, cols, axis, square, rp)
    return res


def csr_slice(a, int64_t r0, int64_t r1, int64_t c0, int64_t c1, out, str api):
    """csr ``out`` = a[r0:r1, c0:c1] (bounds already clipped)."""
    require_csr(a, api)
    v = _values(a, out.dtype)
    cdef int64_t rows = r1 - r0, nnz
    indptr = np.empty(rows + 1, _INT64)
    first = np.empty(max(rows, 1), _INT64)
    cdef int64_t* ip = _iptr(a.indptr)
    cdef int64_t* ix = _iptr(a.indices)
    cdef int64_t* p = _iptr(indptr)
    cdef int64_t* f = _iptr(first)
    with nogil:
        nnz = k_csr_slice_count(ip, ix, r0, r1, c0, c1, p, f)
    out.alloc_csr(nnz, indptr)
    cdef int dt = _dtype(v)
    cdef void* vp = _ptr(v)
    cdef int64_t* oi = _iptr(out.indices)
    cdef void* od = _ptr(out.data)
    with nogil:
        k_csr_slice_fill(dt, vp, ix, rows, c0, p, f, oi, od)


def csr_where(cond, x, y, out, str api):
    """Dense ``out`` = where(csr ``cond``, x, y) (x, y dense of cond's shape)."""
    require_csr(cond, api)
    c = np.ascontiguousarray(cond.data)
    xs = np.ascontiguousarray(x, out.dtype)
    out[...] = y
    cdef int cdt = _dtype(c), dt = _dtype(xs)
    cdef int64_t rows = cond.shape[0], cols = cond.shape[1]
    cdef void* cp = _ptr(c)
    cdef void* xp = _ptr(xs)
    cdef void* op_ = _ptr(out)
    cdef int64_t* ip = _iptr(cond.indptr)
    cdef int64_t* ix = _iptr(cond.indices)
    with nogil:
        k_csr_where(cdt, cp, ip, ix, rows, cols, dt, xp, op_)
