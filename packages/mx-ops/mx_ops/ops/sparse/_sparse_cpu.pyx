"""The CPU kernels of the sparse storage types (sparse_cpu.h) over NumPy
arrays, run without the GIL: cast_storage in two passes (count, then
allocate exactly, then fill), the format checks and the CSR union of
elemwise_add/sub.  The callers (cast_storage.py, sparse_ops.py) allocate
the components between the passes, as MXNet's CheckAndAlloc."""
from libc.stdint cimport int64_t

import numpy as np

from mx_ops.core.dtypes import DTYPE_FLAGS
from mx_ops.core.stype import host_empty

cdef extern from "sparse_cpu.h" namespace "mxop::sparse" nogil:
    int64_t dns_csr_count(int dtype, const void* dns, int64_t rows, int64_t cols,
                          int64_t* indptr)
    int dns_csr_fill(int dtype, const void* dns, int64_t rows, int64_t cols,
                     const int64_t* indptr, int64_t* indices, void* data)
    int64_t dns_rsp_count(int dtype, const void* dns, int64_t rows, int64_t width,
                          int64_t* keep)
    int dns_rsp_fill(int dtype, const void* dns, int64_t rows, int64_t width,
                     const int64_t* keep, int64_t* indices, void* data)
    int csr_dns(int dtype, const void* data, const int64_t* indptr, const int64_t* indices,
                int64_t rows, int64_t cols, void* dns)
    int rsp_dns(int dtype, const void* data, const int64_t* indices, int64_t kept,
                int64_t rows, int64_t width, void* dns)
    int csr_check(const int64_t* indptr, int64_t indptr_len, const int64_t* indices,
                  int64_t nnz, int64_t rows, int64_t cols, int64_t* pos)
    int rsp_check(const int64_t* indices, int64_t kept, int64_t rows, int64_t* pos)
    int64_t csr_union_merge(int dtype, const void* av, const int64_t* ap, const int64_t* ai,
                            const void* bv, const int64_t* bp, const int64_t* bi, int64_t rows,
                            int64_t cost, int64_t* indptr, int64_t* sidx, void* sval)
    int csr_union_compact(int dtype, const int64_t* ap, const int64_t* bp, int64_t rows,
                          int64_t cost, const int64_t* indptr, const int64_t* sidx,
                          const void* sval, int64_t* indices, void* data)

_INT64 = np.dtype("int64")


cdef inline void* _ptr(a):
    return <void*><size_t>a.__array_interface__["data"][0]


cdef int _dtype(a) except -1:
    flag = DTYPE_FLAGS.get(a.dtype.name, -1)
    if flag < 0:
        raise TypeError(f"sparse kernel: dtype {a.dtype} is not supported")
    return flag


cdef inline int64_t _width(a):
    cdef int64_t n = 1
    for s in a.shape[1:]:
        n *= s
    return n


def dense_to_csr(dns, blob):
    """Fills SparseBlob ``blob`` (csr) from C-contiguous 2-D ``dns``."""
    cdef int dt = _dtype(dns)
    cdef int64_t rows = dns.shape[0], cols = dns.shape[1], nnz
    indptr = np.empty(rows + 1, _INT64)
    cdef void* x = _ptr(dns)
    cdef int64_t* p = <int64_t*>_ptr(indptr)
    with nogil:
        nnz = dns_csr_count(dt, x, rows, cols, p)
    blob.alloc_csr(nnz, indptr)
    cdef int64_t* idx = <int64_t*>_ptr(blob.indices)
    cdef void* data = _ptr(blob.data)
    with nogil:
        dns_csr_fill(dt, x, rows, cols, p, idx, data)


def dense_to_rsp(dns, blob):
    """Fills SparseBlob ``blob`` (row_sparse) from C-contiguous ``dns``."""
    cdef int dt = _dtype(dns)
    cdef int64_t rows = dns.shape[0] if dns.ndim else 1, width = _width(dns), kept
    keep = np.empty(rows + 1, _INT64)
    cdef void* x = _ptr(dns)
    cdef int64_t* k = <int64_t*>_ptr(keep)
    with nogil:
        kept = dns_rsp_count(dt, x, rows, width, k)
    blob.alloc_rsp(kept)
    cdef int64_t* idx = <int64_t*>_ptr(blob.indices)
    cdef void* data = _ptr(blob.data)
    with nogil:
        dns_rsp_fill(dt, x, rows, width, k, idx, data)


_WHY = {1: "indptr has {pos} entries, not rows + 1", 2: "indptr[0] is not 0",
        3: "indptr decreases at indptr[{pos}]", 4: "indptr[{pos}] is not the number of values",
        5: "indices[{pos}] is out of range", 6: "indices are not sorted at indices[{pos}]",
        7: "indices has {pos} entries, fewer than the values"}


def require_csr(blob, api):
    """Raises ValueError (naming ``api`` and the first bad position) unless
    csr SparseBlob ``blob`` is well formed: kernels index memory with it."""
    code, pos = check_csr(blob.indptr, blob.indices, blob.data.shape[0], blob.shape[0],
                          blob.shape[1])
    if code:
        raise ValueError(f"{api}: malformed csr input: {_WHY[code].format(pos=pos)} "
                         f"(check_format names it)")


def require_rsp(blob, api):
    """Likewise for a row_sparse blob's indices."""
    code, pos = check_rsp(blob.indices, blob.shape[0])
    if code or blob.data.shape[0] != blob.indices.shape[0]:
        raise ValueError(f"{api}: malformed row_sparse input: "
                         f"{_WHY.get(code, 'data and indices disagree').format(pos=pos)} "
                         f"(check_format names it)")


def csr_to_dense(blob, out):
    """Writes csr SparseBlob ``blob`` into C-contiguous 2-D ``out``."""
    require_csr(blob, "cast_storage")
    cdef int dt = _dtype(out)
    data = np.ascontiguousarray(blob.data, out.dtype)
    cdef void* v = _ptr(data)
    cdef int64_t* p = <int64_t*>_ptr(blob.indptr)
    cdef int64_t* idx = <int64_t*>_ptr(blob.indices)
    cdef int64_t rows = out.shape[0], cols = out.shape[1]
    cdef void* o = _ptr(out)
    with nogil:
        csr_dns(dt, v, p, idx, rows, cols, o)


def rsp_to_dense(blob, out):
    """Writes row_sparse SparseBlob ``blob`` into C-contiguous ``out``."""
    require_rsp(blob, "cast_storage")
    cdef int dt = _dtype(out)
    data = np.ascontiguousarray(blob.data, out.dtype)
    cdef void* v = _ptr(data)
    cdef int64_t* idx = <int64_t*>_ptr(blob.indices)
    cdef int64_t kept = blob.indices.shape[0], rows = out.shape[0], width = _width(out)
    cdef void* o = _ptr(out)
    with nogil:
        rsp_dns(dt, v, idx, kept, rows, width, o)


def check_csr(indptr, indices, int64_t nnz, int64_t rows, int64_t cols):
    """(code, first bad position) of csr components (sparse_cpu.h's codes)."""
    indptr = np.ascontiguousarray(indptr, _INT64)
    indices = np.ascontiguousarray(indices, _INT64)
    cdef int64_t* p = <int64_t*>_ptr(indptr)
    cdef int64_t* idx = <int64_t*>_ptr(indices)
    cdef int64_t n = indptr.shape[0], pos = 0
    cdef int code
    if indices.shape[0] < nnz:
        return 7, indices.shape[0]
    with nogil:
        code = csr_check(p, n, idx, nnz, rows, cols, &pos)
    return code, pos


def check_rsp(indices, int64_t rows):
    """(code, first bad position) of row_sparse indices."""
    indices = np.ascontiguousarray(indices, _INT64)
    cdef int64_t* idx = <int64_t*>_ptr(indices)
    cdef int64_t kept = indices.shape[0], pos = 0
    cdef int code
    with nogil:
        code = rsp_check(idx, kept, rows, &pos)
    return code, pos


def csr_union(a, b, int sign, out):
    """csr SparseBlob ``out`` = ``a`` + sign * ``b`` (csr blobs of one shape)."""
    require_csr(a, "elemwise_add" if sign > 0 else "elemwise_sub")
    require_csr(b, "elemwise_add" if sign > 0 else "elemwise_sub")
    cdef int64_t rows = out.shape[0], nnz
    av = np.ascontiguousarray(a.data, out.dtype)
    # A subtraction adds b's negated values (integers wrap alike).
    bv = (np.ascontiguousarray(b.data, out.dtype) if sign > 0
          else np.negative(b.data, dtype=out.dtype))
    cdef int64_t cost = (av.shape[0] + bv.shape[0]) // rows + 1 if rows else 1
    cdef int dt = _dtype(av)
    indptr = np.empty(rows + 1, _INT64)
    cdef int64_t* ap = <int64_t*>_ptr(a.indptr)
    cdef int64_t* ai = <int64_t*>_ptr(a.indices)
    cdef int64_t* bp = <int64_t*>_ptr(b.indptr)
    cdef int64_t* bi = <int64_t*>_ptr(b.indices)
    cdef int64_t* p = <int64_t*>_ptr(indptr)
    cdef void* x = _ptr(av)
    cdef void* y = _ptr(bv)
    # The rows' unions go to a scratch first (pooled when large: fresh pages
    # cost more than the merge), where row r starts at ap[r] + bp[r]; the
    # output, once nnz is known, takes them compacted.
    scratch_idx = host_empty((av.shape[0] + bv.shape[0],), _INT64)
    scratch_val = host_empty((av.shape[0] + bv.shape[0],), av.dtype)
    cdef int64_t* sidx = <int64_t*>_ptr(scratch_idx)
    cdef void* sval = _ptr(scratch_val)
    with nogil:
        nnz = csr_union_merge(dt, x, ap, ai, y, bp, bi, rows, cost, p, sidx, sval)
    out.alloc_csr(nnz, indptr)
    cdef int64_t* idx = <int64_t*>_ptr(out.indices)
    cdef void* data = _ptr(out.data)
    with nogil:
        csr_union_compact(dt, ap, bp, rows, cost, p, sidx, sval, idx, data)
