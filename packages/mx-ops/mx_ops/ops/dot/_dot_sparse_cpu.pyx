"""The CPU kernels of dot with a sparse operand (dot_sparse_cpu.h) over
NumPy arrays, run without the GIL and split by output rows across the
cores.  dot_sparse.py picks them by storage type and allocates the
outputs between passes (MXNet's CheckAndAlloc).  float32 and float64;
indptr and indices int64.  Each function returns False when a csr column
index was out of range (the caller raises, naming the operand)."""
from libc.stdint cimport int64_t

import numpy as np

from mx_ops.core.dtypes import DTYPE_FLAGS

cdef extern from "dot_sparse_cpu.h" namespace "mxop" nogil:
    int spdot_csr_dense(int dtype, const void* data, const int64_t* indptr,
                        const int64_t* indices, int64_t nnz, int64_t bound, const int64_t* sel,
                        int64_t nout, const int64_t* map, const void* B, int64_t n, void* out,
                        bint add)
    int spdot_columns_with_entries(const int64_t* indptr, const int64_t* indices, int64_t rows,
                                   int64_t cols, const int64_t* map, int64_t* keep)
    int spdot_csr_t_dense(int dtype, const void* data, const int64_t* indptr,
                          const int64_t* indices, int64_t rows, int64_t cols, const int64_t* sel,
                          int64_t nout, const int64_t* map, const void* B, int64_t n, void* out,
                          bint add)
    int spdot_dense_csr(int dtype, const void* A, int64_t M, int64_t K, const void* data,
                        const int64_t* indptr, const int64_t* indices, int64_t N,
                        const int64_t* colmap, int64_t width, void* out, bint add)
    int spdot_dense_csr_t(int dtype, const void* A, int64_t M, int64_t K, const void* data,
                          const int64_t* indptr, const int64_t* indices, int64_t N, void* out,
                          bint add)

include "mx_ops/core/_isa.pxi"

_INT64 = np.dtype("int64")


cdef inline void* _ptr(a):
    if a is None:
        return NULL
    return <void*><size_t>a.__array_interface__["data"][0]


cdef int _dtype(a) except -1:
    flag = DTYPE_FLAGS.get(a.dtype.name, -1)
    if a.dtype.name not in ("float32", "float64"):
        raise TypeError(f"dot: dtype {a.dtype} is not supported with sparse inputs; supported: "
                        f"float32, float64")
    return flag


def csr_times_dense(data, indptr, indices, int64_t cols, B, out, bint add=False, sel=None,
                    row_map=None):
    """out (nout x n) = rows ``sel`` of the csr (all when None) times ``B``
    (n columns).  ``row_map`` (one int64 per csr column: B's row, or -1
    for a zero row) maps the columns to B's rows for a row_sparse B."""
    cdef int dt = _dtype(out)
    cdef int64_t nnz = data.shape[0], nout = out.shape[0], n = out.shape[1] if out.ndim > 1 else 1
    cdef const void* v = _ptr(data)
    cdef const int64_t* p = <const int64_t*>_ptr(indptr)
    cdef const int64_t* idx = <const int64_t*>_ptr(indices)
    cdef const int64_t* s = <const int64_t*>_ptr(sel)
    cdef const int64_t* m = <const int64_t*>_ptr(row_map)
    cdef const void* b = _ptr(B)
    cdef void* o = _ptr(out)
    cdef int rc
    with nogil:
        rc = spdot_csr_dense(dt, v, p, idx, nnz, cols, s, nout, m, b, n, o, add)
    return rc == 0


def columns_with_entries(indptr, indices, int64_t cols, row_map=None):
    """The columns (ascending, int64) holding an entry whose row maps to a
    stored row of B (any entry when ``row_map`` is None); None if a
    column index is outside [0, cols)."""
    cdef int64_t rows = indptr.shape[0] - 1
    keep = np.empty(cols, _INT64)
    cdef const int64_t* p = <const int64_t*>_ptr(indptr)
    cdef const int64_t* idx = <const int64_t*>_ptr(indices)
    cdef const int64_t* m = <const int64_t*>_ptr(row_map)
    cdef int64_t* k = <int64_t*>_ptr(keep)
    cdef int rc
    with nogil:
        rc = spdot_columns_with_entries(p, idx, rows, cols, m, k)
    return np.flatnonzero(keep) if rc == 0 else None


def csr_t_times_dense(data, indptr, indices, int64_t cols, B, out, bint add=False, sel=None,
                      row_map=None):
    """out (nout x n) = the transpose of the csr (rows x cols) times ``B``:
    output row r is csr column sel[r] (``sel``: ascending, from
    columns_with_entries, which also checked the columns; None: every
    column).  ``row_map`` as for csr_times_dense."""
    cdef int dt = _dtype(out)
    cdef int64_t rows = indptr.shape[0] - 1, nout = out.shape[0]
    cdef int64_t n = out.shape[1] if out.ndim > 1 else 1
    cdef const void* v = _ptr(data)
    cdef const int64_t* p = <const int64_t*>_ptr(indptr)
    cdef const int64_t* idx = <const int64_t*>_ptr(indices)
    cdef const int64_t* s = <const int64_t*>_ptr(sel)
    cdef const int64_t* m = <const int64_t*>_ptr(row_map)
    cdef const void* b = _ptr(B)
    cdef void* o = _ptr(out)
    with nogil:
        spdot_csr_t_dense(dt, v, p, idx, rows, cols, s, nout, m, b, n, o, add)


def dense_times_csr(A, data, indptr, indices, int64_t cols, out, bint add=False, col_map=None):
    """out (M x width) = A (M x K) times the csr (K x cols), whose columns
    go through ``col_map`` (None: the identity) into an output row."""
    cdef int dt = _dtype(out)
    cdef int64_t M = A.shape[0], K = A.shape[1], width = out.shape[1]
    cdef const void* a = _ptr(A)
    cdef const void* v = _ptr(data)
    cdef const int64_t* p = <const int64_t*>_ptr(indptr)
    cdef const int64_t* idx = <const int64_t*>_ptr(indices)
    cdef const int64_t* cm = <const int64_t*>_ptr(col_map)
    cdef void* o = _ptr(out)
    cdef int rc
    with nogil:
        rc = spdot_dense_csr(dt, a, M, K, v, p, idx, cols, cm, width, o, add)
    return rc == 0


def dense_times_csr_t(A, data, indptr, indices, out, bint add=False):
    """out (M x N) = A (M x K) times the transpose of the csr (N x K)."""
    cdef int dt = _dtype(out)
    cdef int64_t M = A.shape[0], K = A.shape[1], N = out.shape[1]
    cdef const void* a = _ptr(A)
    cdef const void* v = _ptr(data)
    cdef const int64_t* p = <const int64_t*>_ptr(indptr)
    cdef const int64_t* idx = <const int64_t*>_ptr(indices)
    cdef void* o = _ptr(out)
    cdef int rc
    with nogil:
        rc = spdot_dense_csr_t(dt, a, M, K, v, p, idx, N, o, add)
    return rc == 0
