"""The CuPy twin of dot's sparse kernels (_dot_sparse_cpu.pyx, same
functions and signatures): one thread per output element, each owning it,
so no atomics and a fixed summation order (the stored entries' order).
csr.T x dense gathers over the transpose, a stable sort of the entries by
column (rows ascending within one).  dot_sparse.py's drivers run over this module
as over the CPU one.  Importing this module without CuPy raises
ImportError."""
import sys

import cupy

from mx_ops.core._cuda import launch, raw_module
from mx_ops.ops.dot.dot_sparse import backward_dot, dot_forward

_SOURCE = r"""
#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

// out[r, j] (+)= sum over entries e of csr row src(r) of data[e] * B[map(col), j];
// src(r) = sel[r] (or r), map = row_map (or the identity; -1: a zero row).
// bad is set for a column outside [0, bound).
template <typename T>
__global__ void mx_spdot_csr_dense(const T *data, const long long *indptr,
                                   const long long *indices, long long bound,
                                   const long long *sel, long long nout, const long long *row_map,
                                   const T *B, long long n, T *out, int add, int *bad) {
  MX_GRID_STRIDE(i, nout * n) {
    const long long r = i / n, j = i % n, s = sel ? sel[r] : r;
    T acc = T(0);
    for (long long e = indptr[s]; e < indptr[s + 1]; ++e) {
      const long long c = indices[e];
      if (c < 0 || c >= bound) { *bad = 1; continue; }
      const long long k = row_map ? row_map[c] : c;
      if (k >= 0) acc += data[e] * B[k * n + j];
    }
    out[i] = add ? T(out[i] + acc) : acc;
  }
}

// out[i, w] (+)= sum_k A[i, k] * C[k, c] for the columns c of csr C that
// col_map (or the identity) sends to w: each thread scans C's rows.
template <typename T>
__global__ void mx_spdot_dense_csr(const T *A, long long M, long long K, const T *data,
                                   const long long *indptr, const long long *indices,
                                   long long N, const long long *col_map, const long long *used,
                                   long long width, T *out, int add, int *bad) {
  MX_GRID_STRIDE(i, M * width) {
    const long long r = i / width, w = i % width, c = used ? used[w] : w;
    T acc = T(0);
    for (long long k = 0; k < K; ++k) {
      const T a = A[r * K + k];
      if (a == T(0)) continue;
      for (long long e = indptr[k]; e < indptr[k + 1]; ++e) {
        const long long col = indices[e];
        if (col < 0 || col >= N) { *bad = 1; continue; }
        if (col == c) acc += a * data[e];
      }
    }
    out[i] = add ? T(out[i] + acc) : acc;
  }
}

// out[i, j] (+)= sum over row j of csr C (N x K) of A[i, col] * value.
template <typename T>
__global__ void mx_spdot_dense_csr_t(const T *A, long long M, long long K, const T *data,
                                     const long long *indptr, const long long *indices,
                                     long long N, T *out, int add, int *bad) {
  MX_GRID_STRIDE(i, M * N) {
    const long long r = i / N, j = i % N;
    T acc = T(0);
    for (long long e = indptr[j]; e < indptr[j + 1]; ++e) {
      const long long c = indices[e];
      if (c < 0 || c >= K) { *bad = 1; continue; }
      acc += A[r * K + c] * data[e];
    }
    out[i] = add ? T(out[i] + acc) : acc;
  }
}
"""
_KERNELS = ("mx_spdot_csr_dense", "mx_spdot_dense_csr", "mx_spdot_dense_csr_t")
_CTYPES = {"float32": "float", "float64": "double"}
_NAMES = [f"{k}<{t}>" for k in _KERNELS for t in _CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_INT64 = cupy.dtype("int64")


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_spdot", _SOURCE, tuple(_NAMES))]


def _k(name, dtype):
    if dtype.name not in _CTYPES:
        raise TypeError(f"dot: dtype {dtype} is not supported with sparse inputs; supported: "
                        f"float32, float64")
    return _kernel(f"{name}<{_CTYPES[dtype.name]}>")


def _flag():
    return cupy.zeros(1, cupy.int32)


def _ptr_or_null(a):
    return a if a is not None else cupy.uint64(0)


def csr_times_dense(data, indptr, indices, cols, B, out, add=False, sel=None, row_map=None):
    bad = _flag()
    nout, n = out.shape[0], (out.shape[1] if out.ndim > 1 else 1)
    launch(_k("mx_spdot_csr_dense", out.dtype), nout * n,
           (data, indptr, indices, cupy.int64(cols), _ptr_or_null(sel), cupy.int64(nout),
            _ptr_or_null(row_map), cupy.ascontiguousarray(B), cupy.int64(n), out,
            cupy.int32(add), bad))
    return not bool(bad[0])


def _entry_rows(indptr, nnz):
    return cupy.searchsorted(indptr, cupy.arange(nnz), side="right") - 1


def columns_with_entries(indptr, indices, cols, row_map=None):
    nnz = int(indptr[-1])
    ix = indices[:nnz]
    if nnz and (int(ix.min()) < 0 or int(ix.max()) >= cols):
        return None
    if row_map is not None:
        ix = ix[row_map[_entry_rows(indptr, nnz)] >= 0]
    return cupy.unique(ix).astype(_INT64)


def csr_t_times_dense(data, indptr, indices, cols, B, out, add=False, sel=None, row_map=None):
    """The transpose as a stable sort of the entries by column (source rows
    ascending within one), then the gather of csr_times_dense."""
    nnz = data.shape[0]
    ix = indices[:nnz]
    rows = _entry_rows(indptr, nnz)
    order = cupy.lexsort(cupy.stack([rows, ix]))        # by column, then row
    tindptr = cupy.zeros(cols + 1, _INT64)
    cupy.cumsum(cupy.bincount(ix, minlength=cols), out=tindptr[1:])
    csr_times_dense(data[order], tindptr, rows[order].astype(_INT64), indptr.shape[0] - 1, B,
                    out, add, sel, row_map)


def dense_times_csr(A, data, indptr, indices, cols, out, add=False, col_map=None):
    bad = _flag()
    M, K = A.shape
    width = out.shape[1]
    used = None
    if col_map is not None:             # the column of each output slot
        used = cupy.flatnonzero(col_map >= 0).astype(_INT64)
    launch(_k("mx_spdot_dense_csr", out.dtype), M * width,
           (A, cupy.int64(M), cupy.int64(K), data, indptr, indices, cupy.int64(cols),
            _ptr_or_null(col_map), _ptr_or_null(used), cupy.int64(width), out,
            cupy.int32(add), bad))
    return not bool(bad[0])


def dense_times_csr_t(A, data, indptr, indices, out, add=False):
    bad = _flag()
    M, K = A.shape
    N = out.shape[1]
    launch(_k("mx_spdot_dense_csr_t", out.dtype), M * N,
           (A, cupy.int64(M), cupy.int64(K), data, indptr, indices, cupy.int64(N), out,
            cupy.int32(add), bad))
    return not bool(bad[0])


_THIS = sys.modules[__name__]
forward = dot_forward(_THIS)
backward = backward_dot(_THIS)
