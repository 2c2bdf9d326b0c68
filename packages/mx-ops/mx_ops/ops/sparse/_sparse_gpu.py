"""The CuPy twin of the sparse kernels (sparse_cpu.h): cast_storage in two
passes (a count kernel per row, a prefix sum, a fill kernel per row) and
scatters into dense.  Importing this module without CuPy raises
ImportError."""
import cupy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.ops.sparse.cast_storage import blob_stype, check_cast, copy_blob

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

// Pass 1 of dense -> csr (row_sparse: cols = the row width, counts 0/1):
// counts[i + 1] = the nonzeros of row i (any, for row_sparse).
template <typename T>
__global__ void mx_sparse_count(const T *x, long long rows, long long cols, int any,
                                long long *counts) {
  MX_GRID_STRIDE(i, rows) {
    long long n = 0;
    for (long long j = 0; j < cols; ++j) n += x[i * cols + j] != T(0);
    counts[i + 1] = any ? (n > 0) : n;
  }
}

// Pass 2 of dense -> csr: row i's columns and values at indptr[i].
template <typename T>
__global__ void mx_csr_fill(const T *x, long long rows, long long cols,
                            const long long *indptr, long long *indices, T *data) {
  MX_GRID_STRIDE(i, rows) {
    long long k = indptr[i];
    for (long long j = 0; j < cols; ++j) {
      const T v = x[i * cols + j];
      if (v != T(0)) { indices[k] = j; data[k] = v; ++k; }
    }
  }
}

// Pass 2 of dense -> row_sparse, one thread per element of a kept row.
template <typename T>
__global__ void mx_rsp_fill(const T *x, long long rows, long long width,
                            const long long *keep, long long *indices, T *data) {
  MX_GRID_STRIDE(e, rows * width) {
    const long long i = e / width, j = e % width;
    if (keep[i + 1] != keep[i]) {
      data[keep[i] * width + j] = x[e];
      if (j == 0) indices[keep[i]] = i;
    }
  }
}

// csr -> dense scatter (out zeroed before), one thread per row.
template <typename T>
__global__ void mx_csr_scatter(const T *data, const long long *indptr, const long long *indices,
                               long long rows, long long cols, T *out) {
  MX_GRID_STRIDE(i, rows) {
    for (long long k = indptr[i]; k < indptr[i + 1]; ++k) out[i * cols + indices[k]] = data[k];
  }
}
"""
_KERNELS = ("mx_sparse_count", "mx_csr_fill", "mx_rsp_fill", "mx_csr_scatter")
_NAMES = [f"{k}<{t}>" for k in _KERNELS for t in CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_INT64 = cupy.dtype("int64")


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_sparse", _SOURCE, tuple(_NAMES))]


def _k(name, dtype):
    return _kernel(f"{name}<{CTYPES[dtype.name]}>")


def _counts(x, rows, width, any_row):
    counts = cupy.zeros(rows + 1, _INT64)
    launch(_k("mx_sparse_count", x.dtype), rows,
           (x, cupy.int64(rows), cupy.int64(width), cupy.int32(any_row), counts))
    cupy.cumsum(counts, out=counts)
    return counts, int(counts[-1])


def dense_to_csr(x, dst):
    x = cupy.ascontiguousarray(x)
    rows, cols = x.shape
    indptr, nnz = _counts(x, rows, cols, 0)
    dst.alloc_csr(nnz, indptr)
    launch(_k("mx_csr_fill", x.dtype), rows,
           (x, cupy.int64(rows), cupy.int64(cols), indptr, dst.indices, dst.data))


def dense_to_rsp(x, dst):
    x = cupy.ascontiguousarray(x)
    rows = x.shape[0]
    width = x.size // rows if rows else 0
    keep, kept = _counts(x, rows, width, 1)
    dst.alloc_rsp(kept)
    launch(_k("mx_rsp_fill", x.dtype), rows * width,
           (x, cupy.int64(rows), cupy.int64(width), keep, dst.indices, dst.data))


def _require(ok, api, what):
    if not bool(ok):
        raise ValueError(f"{api}: malformed {what} input (check_format names the position)")


def csr_to_dense(src, out):
    rows, cols = out.shape
    ip, ix = src.indptr, src.indices
    _require(ip.shape[0] == rows + 1 and ix.shape[0] >= src.data.shape[0] and
             int(ip[0]) == 0 and int(ip[-1]) == src.data.shape[0] and
             bool((cupy.diff(ip) >= 0).all()) and
             bool(((ix >= 0) & (ix < cols)).all()), "cast_storage", "csr")
    out[...] = 0
    data = cupy.ascontiguousarray(src.data, out.dtype)
    launch(_k("mx_csr_scatter", out.dtype), rows,
           (data, src.indptr, src.indices, cupy.int64(rows), cupy.int64(cols), out))


def rsp_to_dense(src, out):
    ix = src.indices
    _require(src.data.shape[0] == ix.shape[0] and bool(((ix >= 0) & (ix < out.shape[0])).all()),
             "cast_storage", "row_sparse")
    out[...] = 0
    if src.indices.shape[0]:
        out[src.indices] = src.data.astype(out.dtype, copy=False)


def cast_gpu(params, inputs, outputs, reqs):
    """cast_storage's GPU compute (cast_storage.cast_cpu's twin)."""
    del params, reqs
    src, dst = inputs[0], outputs[0]
    kind = (blob_stype(src), blob_stype(dst))
    if kind == ("default", "csr"):
        dense_to_csr(src, dst)
    elif kind == ("default", "row_sparse"):
        dense_to_rsp(src, dst)
    elif kind == ("csr", "default"):
        csr_to_dense(src, dst)
    elif kind == ("row_sparse", "default"):
        rsp_to_dense(src, dst)
    elif kind[0] == kind[1] != "default":
        copy_blob(src, dst)
    else:
        check_cast(kind[0], kind[1], dst.shape)
