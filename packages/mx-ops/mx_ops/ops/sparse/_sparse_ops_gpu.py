"""The CuPy twin of sparse_ops_cpu.h: the csr kernels (csr op dense with
broadcasting, the scatter of csr entries into a dense result, per-row
sums, slices, where) as RawKernels, one thread per row; the row_sparse
ones (rows shared by two arrays, add_n's union) with CuPy's sorted-index
routines, csr column sums CuPy's scatter_add.  csr op csr is CPU code:
binary.py's rule falls back to dense on a GPU.
Importing this module without CuPy raises ImportError."""
from types import SimpleNamespace

import cupy

from mx_ops.core._cuda import CTYPES, launch, raw_module, scatter_add
from mx_ops.ops.sparse import _sparse_gpu
from mx_ops.ops.sparse.binary import broadcast_compute, elemwise_compute
from mx_ops.ops.sparse.cast_storage import blob_stype
from mx_ops.ops.sparse.reduce import reduce_compute
from mx_ops.ops.sparse.select import slice_bounds
from mx_ops.ops.sparse.sparse_ops import rsp_union

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

// out[k] = v[k] (op 0: *, 1: /) d[i * rs + j * cs] (sparse_ops_cpu.h's csr_dense_op;
// the integer division rule of apply_op).
template <typename T>
__global__ void mx_csr_dense_op(const T *v, const long long *indptr, const long long *indices,
                                long long rows, const T *d, long long rs, long long cs, int op,
                                T *out) {
  MX_GRID_STRIDE(i, rows) {
    for (long long k = indptr[i]; k < indptr[i + 1]; ++k) {
      const T a = v[k], b = d[i * rs + indices[k] * cs];
      if (op == 0) { out[k] = T(a * b); continue; }
      if (T(0.5) == T(0)) {                  // an integer type
        if (b == T(0)) { out[k] = T(0); continue; }
        if (b == T(-1)) { out[k] = T(T(0) - a); continue; }
      }
      out[k] = T(a / b);
    }
  }
}

// out (dense rows x cols) += sign * the csr entries.
template <typename T>
__global__ void mx_csr_scatter_add(const T *v, const long long *indptr,
                                   const long long *indices, long long rows, long long cols,
                                   int sign, T *out) {
  MX_GRID_STRIDE(i, rows) {
    for (long long k = indptr[i]; k < indptr[i + 1]; ++k) {
      T &x = out[i * cols + indices[k]];
      x = sign > 0 ? T(x + v[k]) : T(x - v[k]);
    }
  }
}

// Per-row sums (squared with `square`) in double.
template <typename T>
__global__ void mx_csr_row_sum(const T *v, const long long *indptr, long long rows,
                               int square, double *out) {
  MX_GRID_STRIDE(i, rows) {
    double s = 0;
    for (long long k = indptr[i]; k < indptr[i + 1]; ++k) {
      const double x = double(v[k]);
      s += square ? x * x : x;
    }
    out[i] = s;
  }
}

// where(cond csr, x, y), out holding y: x's value where cond stores a nonzero.
template <typename C, typename T>
__global__ void mx_csr_where(const C *c, const long long *indptr, const long long *indices,
                             long long rows, long long cols, const T *x, T *out) {
  MX_GRID_STRIDE(i, rows) {
    for (long long k = indptr[i]; k < indptr[i + 1]; ++k)
      if (c[k] != C(0)) out[i * cols + indices[k]] = x[i * cols + indices[k]];
  }
}

// The csr slice [r0, r1) x [c0, c1), pass 1: each row's first entry at or
// after c0 and its count below c1 (counts[r + 1]).
__global__ void mx_csr_slice_count(const long long *ip, const long long *ix, long long r0,
                                   long long rows, long long c0, long long c1,
                                   long long *first, long long *counts) {
  MX_GRID_STRIDE(r, rows) {
    long long k = ip[r0 + r];
    const long long e = ip[r0 + r + 1];
    while (k < e && ix[k] < c0) ++k;
    long long n = 0;
    while (k + n < e && ix[k + n] < c1) ++n;
    first[r] = k;
    counts[r + 1] = n;
  }
}

// Pass 2: the entries, columns shifted by c0.
template <typename T>
__global__ void mx_csr_slice_fill(const T *v, const long long *ix, long long rows,
                                  long long c0, const long long *indptr,
                                  const long long *first, long long *indices, T *data) {
  MX_GRID_STRIDE(r, rows) {
    for (long long k = indptr[r], s = first[r]; k < indptr[r + 1]; ++k, ++s) {
      indices[k] = ix[s] - c0;
      data[k] = v[s];
    }
  }
}
"""
_TYPED = ("mx_csr_dense_op", "mx_csr_scatter_add", "mx_csr_row_sum", "mx_csr_slice_fill")
_NAMES = ([f"{k}<{t}>" for k in _TYPED for t in CTYPES.values()]
          + [f"mx_csr_where<{c}, {t}>" for c in CTYPES.values() for t in CTYPES.values()]
          + ["mx_csr_slice_count"])
_kernel = raw_module(_SOURCE, _NAMES)
_I64 = cupy.int64


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_sparse_ops", _SOURCE, tuple(_NAMES))]


def _k(name, *dtypes):
    return _kernel(f"{name}<{', '.join(CTYPES[cupy.dtype(d).name] for d in dtypes)}>")


def _require_csr(blob, api):
    ip, ix, n = blob.indptr, blob.indices, blob.data.shape[0]
    rows, cols = blob.shape
    ok = (ip.shape[0] == rows + 1 and ix.shape[0] >= n and int(ip[0]) == 0
          and int(ip[-1]) == n and bool((cupy.diff(ip) >= 0).all())
          and bool(((ix >= 0) & (ix < cols)).all()))
    if not ok:
        raise ValueError(f"{api}: malformed csr input (check_format names the position)")


def csr_dense_op(a, dense, op, out, api):
    _require_csr(a, api)
    v = cupy.ascontiguousarray(a.data, out.dtype)
    d = cupy.ascontiguousarray(dense, out.dtype)
    rs = d.shape[1] if d.shape[0] != 1 else 0
    cs = 1 if d.shape[1] != 1 else 0
    out.alloc_csr(v.shape[0], a.indptr.copy())
    out.indices[...] = a.indices[:v.shape[0]]
    launch(_k("mx_csr_dense_op", out.dtype), a.shape[0],
           (v, a.indptr, a.indices, _I64(a.shape[0]), d, _I64(rs), _I64(cs),
            cupy.int32(0 if op == "mul" else 1), out.data))


def _scatter(blob, sign, out, api):
    """Dense ``out`` += sign * a csr or row_sparse blob."""
    if blob_stype(blob) == "csr":
        _require_csr(blob, api)
        v = cupy.ascontiguousarray(blob.data, out.dtype)
        launch(_k("mx_csr_scatter_add", out.dtype), blob.shape[0],
               (v, blob.indptr, blob.indices, _I64(blob.shape[0]), _I64(blob.shape[1]),
                cupy.int32(sign), out))
    elif blob.indices.shape[0]:
        v = blob.data.astype(out.dtype, copy=False)
        out[blob.indices] += v if sign > 0 else -v


def _densify(x, dtype):
    kind = blob_stype(x)
    if kind == "default":
        return cupy.asarray(x, dtype)
    out = cupy.empty(x.shape, dtype)
    (_sparse_gpu.csr_to_dense if kind == "csr" else _sparse_gpu.rsp_to_dense)(x, out)
    return out


def _rsp_rsp_mul(a, b, out, api):
    del api
    shared = cupy.intersect1d(a.indices, b.indices)
    out.alloc_rsp(int(shared.shape[0]))
    out.indices[...] = shared
    out.data[...] = (a.data[cupy.searchsorted(a.indices, shared)].astype(out.dtype)
                     * b.data[cupy.searchsorted(b.indices, shared)].astype(out.dtype))


def _rsp_dense_mul(sp, dn, out, api):
    del api
    out.alloc_rsp(sp.indices.shape[0])
    out.indices[...] = sp.indices
    out.data[...] = sp.data.astype(out.dtype) * cupy.asarray(dn)[sp.indices]


def _no_csr_csr(a, b, *args):
    raise AssertionError("csr op csr falls back on a GPU (binary.py's rule)")


# csr op csr never reaches these (binary.py's rule falls back on a GPU).
GPU = SimpleNamespace(
    xp=cupy, densify=_densify, scatter=_scatter, union=rsp_union, csr_csr_mul=_no_csr_csr,
    rsp_rsp_mul=_rsp_rsp_mul, csr_dense_op=csr_dense_op, rsp_dense_mul=_rsp_dense_mul)


def elemwise_gpu(op):
    return elemwise_compute(op, GPU)


def broadcast_gpu(op):
    return broadcast_compute(op, GPU)


def add_n_gpu(params, inputs, outputs, reqs):
    del params, reqs
    out = outputs[0]
    idx = cupy.unique(cupy.concatenate([b.indices for b in inputs]))
    out.alloc_rsp(int(idx.shape[0]))
    out.indices[...] = idx
    out.data[...] = 0
    for b in inputs:        # each input's rows are distinct: no add collides
        out.data[cupy.searchsorted(idx, b.indices)] += b.data.astype(out.dtype, copy=False)


def _axis_sums(src, axis, square, api):
    """float64 per-row (axis 1) or per-column (axis 0) sums of a csr."""
    _require_csr(src, api)
    if axis == 1:
        sums = cupy.empty(src.shape[0], cupy.float64)
        launch(_k("mx_csr_row_sum", src.dtype), src.shape[0],
               (src.data, src.indptr, _I64(src.shape[0]), cupy.int32(square), sums))
        return sums
    v = src.data.astype(cupy.float64)
    sums = cupy.zeros(src.shape[1], cupy.float64)
    scatter_add(sums, src.indices, v * v if square else v)
    return sums


def reduce_gpu(op):
    return reduce_compute(op, SimpleNamespace(xp=cupy, axis_sums=_axis_sums))


def slice_gpu(params, inputs, outputs, reqs):
    del reqs
    a, out = inputs[0], outputs[0]
    _require_csr(a, "slice")
    r0, r1, c0, c1 = slice_bounds(params, a.shape)
    rows = r1 - r0
    first = cupy.empty(max(rows, 1), _I64)
    indptr = cupy.zeros(rows + 1, _I64)
    launch(_kernel("mx_csr_slice_count"), rows,
           (a.indptr, a.indices, _I64(r0), _I64(rows), _I64(c0), _I64(c1), first, indptr))
    cupy.cumsum(indptr, out=indptr)
    out.alloc_csr(int(indptr[-1]), indptr)
    v = cupy.ascontiguousarray(a.data, out.dtype)
    launch(_k("mx_csr_slice_fill", out.dtype), rows,
           (v, a.indices, _I64(rows), _I64(c0), indptr, first, out.indices, out.data))


def where_gpu(params, inputs, outputs, reqs):
    del params, reqs
    cond, x, y = inputs
    out = outputs[0]
    _require_csr(cond, "where")
    out[...] = y
    xs = cupy.ascontiguousarray(x, out.dtype)
    launch(_k("mx_csr_where", cond.dtype, out.dtype), cond.shape[0],
           (cond.data, cond.indptr, cond.indices, _I64(cond.shape[0]), _I64(cond.shape[1]),
            xs, out))
