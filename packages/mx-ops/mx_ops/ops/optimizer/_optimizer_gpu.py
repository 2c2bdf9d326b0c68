"""GPU compute of the optimizer update operators: optimizer_cpu.h's
per-element step as one templated RawKernel per (optimizer, dtype),
states written in place, the output (which may be the weight) stored per
req; and the row_sparse-gradient updates of optimizer_rsp_cpu.h (one
thread per element of the rows updated: the gradient's rows when lazy,
else every row, finding its gradient row by binary search).  float16
computes in float, as on the CPU.  Importing this module without CuPy
raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import OPT_STEP
from mx_ops.ops.optimizer.optimizer import KINDS, values
from mx_ops.ops.optimizer.sparse_update import RSP_KINDS, prepare, rsp_values

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };
""" + OPT_STEP + r"""
// store: 0 discards the new weight (req 'null': the states still update),
// 1 writes it, 3 adds it.
template <int KIND, typename T>
__global__ void mx_opt(const T *w, const T *g, T *s0, T *s1, T *out, long long n,
                       double lr, double wd, double rescale, double clip, double a, double b,
                       double c, int store) {
  typedef typename Acc<T>::type A;
  const double p[7] = {lr, wd, rescale, clip, a, b, c};
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const A v = opt_step<KIND, A, T>(p, (A)w[i], (A)g[i], s0, s1, i);
    if (store == 3) out[i] = T((A)out[i] + v);
    else if (store != 0) out[i] = T(v);
  }
}

// The row_sparse gradient (g: nnz rows of `width`, rows idx, sorted and
// unique) on the weight table w (rows x width) and its states, in place.
template <int KIND, typename T>
__global__ void mx_opt_rsp(T *w, const T *g, const long long *idx, T *s0, T *s1,
                           long long nnz, long long rows, long long width, int lazy,
                           double lr, double wd, double rescale, double clip, double a,
                           double b, double c) {
  typedef typename Acc<T>::type A;
  const double p[7] = {lr, wd, rescale, clip, a, b, c};
  const long long n = (lazy ? nnz : rows) * width;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
       e += (long long)blockDim.x * gridDim.x) {
    const long long r = e / width, j = e % width;
    long long row = r, k = r;
    if (!lazy) {      // the gradient row of weight row r, or -1
      long long lo = 0, hi = nnz;
      while (lo < hi) {
        const long long mid = (lo + hi) / 2;
        if (idx[mid] < r) lo = mid + 1; else hi = mid;
      }
      k = lo < nnz && idx[lo] == r ? lo : -1;
    } else {
      row = idx[r];
    }
    const long long i = row * width + j;
    const A gv = k >= 0 ? A(g[k * width + j]) : A(0);
    if (KIND == 0 && !lazy) {   // MXNet's two passes: scale by 1 - lr*wd (float), then step
      const double no_wd[7] = {lr, 0.0, rescale, clip, a, b, c};
      const T scaled = T(A(1.0f - (float)lr * (float)wd) * A(w[i]));
      w[i] = k >= 0 ? T(opt_step<KIND, A, T>(no_wd, A(scaled), gv, s0, s1, i)) : scaled;
    } else {
      w[i] = T(opt_step<KIND, A, T>(p, A(w[i]), gv, s0, s1, i));
    }
  }
}
"""
_FLOATS = ("float16", "float32", "float64")
_NAMES = [f"mx_opt<{k}, {CTYPES[t]}>" for k in KINDS.values() for t in _FLOATS]
_RSP_NAMES = [f"mx_opt_rsp<{k}, {CTYPES[t]}>" for k in RSP_KINDS.values() for t in _FLOATS]
_kernel = raw_module(_SOURCE, _NAMES + _RSP_NAMES)
_STORE = {"null": 0, "write": 1, "inplace": 1, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_opt", _SOURCE, tuple(_NAMES + _RSP_NAMES))]


def compute(name):
    """The GPU compute of optimizer ``name``: ``fn(params, inputs, outputs,
    reqs)`` over CuPy arrays, on the current stream."""
    kind = KINDS[name]

    def run(params, inputs, outputs, reqs):
        w, g = inputs[0], inputs[1]
        states = list(inputs[2:]) + [w] * (4 - len(inputs))     # unused slots: any pointer
        args = values(name, params)
        launch(_kernel(f"mx_opt<{kind}, {CTYPES[w.dtype.name]}>"), w.size,
               (w, g, states[0], states[1], outputs[0], numpy.int64(w.size),
                *[numpy.float64(v) for v in args], numpy.int32(_STORE[reqs[0]])))
    return run


def rsp_compute(op):
    """The GPU compute of ``op`` with a row_sparse gradient
    (sparse_update.py's storage rules): ``fn(params, inputs, outputs,
    reqs)`` over SparseBlobs and CuPy arrays, on the current stream."""
    kind = RSP_KINDS[op]

    def run(params, inputs, outputs, reqs):
        del reqs
        table, data, indices, tables = prepare(op, inputs, outputs, cupy)
        states = tables + [table] * (2 - len(tables))       # unused slots: any pointer
        rows = table.shape[0] if table.ndim else 1
        width = table.size // rows if rows else 0
        lazy = bool(params.get("lazy_update", True))
        n = (indices.shape[0] if lazy else rows) * width
        launch(_kernel(f"mx_opt_rsp<{kind}, {CTYPES[table.dtype.name]}>"), n,
               (table, data, indices, states[0], states[1], numpy.int64(indices.shape[0]),
                numpy.int64(rows), numpy.int64(width), numpy.int32(lazy),
                *[numpy.float64(v) for v in rsp_values(op, params)]))
    return run
