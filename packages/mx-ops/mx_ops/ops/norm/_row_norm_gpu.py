"""GPU compute of LayerNorm, GroupNorm, InstanceNorm and their backward:
the formulas of row_norm_cpu.h as RawKernels.  One block per row sums the
row (shifted sums in double, tree reduction in shared memory) and writes
its outputs; the backward's gamma and beta gradients are then summed over
the rows by one thread per gamma element.  Sums run in a different order
than on the CPU, so the two agree to rounding.  Importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import raw_module
from mx_ops.ops.norm.row_norm import NORMS

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define RN_THREADS 256

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

template <typename T> __device__ double rn_ld(T v) {
  return (double)(typename Acc<T>::type)v;
}

// req codes: 0 null, 1 write, 2 inplace, 3 add (MXNet's OpReqType).
template <typename T> __device__ void rn_put(T *out, long long i, double v, int req) {
  typedef typename Acc<T>::type A;
  if (req == 3) out[i] = T((A)out[i] + (A)v);
  else if (req != 0) out[i] = T((A)v);
}

// The sums of every thread's a and b in the block (all threads call it).
__device__ void rn_block_sum2(double *a, double *b, double *sh) {
  const int t = threadIdx.x;
  sh[t] = *a;
  sh[RN_THREADS + t] = *b;
  __syncthreads();
  for (int s = RN_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) {
      sh[t] += sh[t + s];
      sh[RN_THREADS + t] += sh[RN_THREADS + t + s];
    }
    __syncthreads();
  }
  *a = sh[0];
  *b = sh[RN_THREADS];
  __syncthreads();
}

// Row r's element k: (o * n + k) * inner + i with r = o * inner + i.
__device__ long long rn_at(long long r, long long k, long long n, long long inner) {
  return (r / inner * n + k) * inner + r % inner;
}

// Block per row (grid-stride over rows): mean, std (or var), output.
template <typename T>
__global__ void mx_rn_forward(const T *x, const T *gamma, const T *beta, T *y, T *mean_out,
                              T *std_out, long long rows, long long n, long long inner,
                              long long per_row, double eps, int save_var, int req_y,
                              int req_mean, int req_std) {
  typedef typename Acc<T>::type A;
  __shared__ double sh[2 * RN_THREADS];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const double x0 = n ? rn_ld(x[rn_at(r, 0, n, inner)]) : 0.0;
    double s = 0, q = 0;
    for (long long k = threadIdx.x; k < n; k += RN_THREADS) {
      const double d = rn_ld(x[rn_at(r, k, n, inner)]) - x0;
      s += d;
      q += d * d;
    }
    rn_block_sum2(&s, &q, sh);
    const double m = n ? s / (double)n : 0.0;
    double var = n ? q / (double)n - m * m : 0.0;
    if (var < 0) var = 0;
    const double mean = x0 + m, rstd = 1.0 / sqrt(var + eps);
    if (threadIdx.x == 0) {
      rn_put(mean_out, r, mean, req_mean);
      rn_put(std_out, r, save_var ? var : sqrt(var + eps), req_std);
    }
    if (req_y == 0) continue;
    for (long long k = threadIdx.x; k < n; k += RN_THREADS) {
      const long long e = rn_at(r, k, n, inner);
      const long long j = per_row ? r % per_row : k;
      const A v = (A)((rn_ld(x[e]) - mean) * rstd) * (A)gamma[j] + (A)beta[j];
      y[e] = req_y == 3 ? T((A)y[e] + v) : T(v);
    }
  }
}

// Block per row: dx, and for per-row parameters the row's sums of
// dy * xhat and dy into row_sums.
template <typename T>
__global__ void mx_rn_backward(const T *dy, const T *x, const T *gamma, const T *mean_in,
                               const T *saved, T *dx, double *row_sums, long long rows,
                               long long n, long long inner, long long per_row, double eps,
                               int save_var, int req_dx) {
  typedef typename Acc<T>::type A;
  __shared__ double sh[2 * RN_THREADS];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const double mean = rn_ld(mean_in[r]), sv = rn_ld(saved[r]);
    const double rstd = save_var ? 1.0 / sqrt(sv + eps) : 1.0 / sv;
    const double wrow = per_row ? rn_ld(gamma[r % per_row]) : 1.0;
    double sg = 0, sgx = 0;
    for (long long k = threadIdx.x; k < n; k += RN_THREADS) {
      const long long e = rn_at(r, k, n, inner);
      const double g = rn_ld(dy[e]) * (per_row ? 1.0 : rn_ld(gamma[k]));
      sg += g;
      sgx += g * (rn_ld(x[e]) - mean);
    }
    rn_block_sum2(&sg, &sgx, sh);
    if (per_row && threadIdx.x == 0) {
      row_sums[2 * r] = sgx * rstd;
      row_sums[2 * r + 1] = sg;
    }
    if (per_row) {
      sg *= wrow;
      sgx *= wrow;
    }
    if (req_dx == 0) continue;
    const double inv_n = n ? 1.0 / (double)n : 0.0;
    const double c0 = sg * inv_n, c1 = sgx * inv_n * rstd * rstd;
    for (long long k = threadIdx.x; k < n; k += RN_THREADS) {
      const long long e = rn_at(r, k, n, inner);
      const double w = per_row ? wrow : rn_ld(gamma[k]);
      const A v = (A)((rn_ld(dy[e]) * w - c0 - (rn_ld(x[e]) - mean) * c1) * rstd);
      dx[e] = req_dx == 3 ? T((A)dx[e] + v) : T(v);
    }
  }
}

// Thread per gamma element j: dgamma[j], dbeta[j] summed over the rows
// (LayerNorm: element k = j of every row; per-row parameters: the row
// sums of the rows r = j mod per_row).
template <typename T>
__global__ void mx_rn_param_grad(const T *dy, const T *x, const T *mean_in, const T *saved,
                                 const double *row_sums, T *dgamma, T *dbeta, long long rows,
                                 long long n, long long inner, long long per_row, double eps,
                                 int save_var, int req_g, int req_b) {
  const long long len = per_row ? per_row : n;
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < len;
       j += (long long)blockDim.x * gridDim.x) {
    double sg = 0, sb = 0;
    if (per_row) {
      for (long long r = j; r < rows; r += per_row) {
        sg += row_sums[2 * r];
        sb += row_sums[2 * r + 1];
      }
    } else {
      for (long long r = 0; r < rows; ++r) {
        const long long e = rn_at(r, j, n, inner);
        const double sv = rn_ld(saved[r]);
        const double rstd = save_var ? 1.0 / sqrt(sv + eps) : 1.0 / sv;
        const double d = rn_ld(dy[e]);
        sg += d * (rn_ld(x[e]) - rn_ld(mean_in[r])) * rstd;
        sb += d;
      }
    }
    rn_put(dgamma, j, sg, req_g);
    rn_put(dbeta, j, sb, req_b);
  }
}
"""
_TYPES = {"float16": "float16", "float32": "float", "float64": "double"}
_NAMES = [f"mx_rn_{k}<{t}>" for t in _TYPES.values()
          for k in ("forward", "backward", "param_grad")]
_kernel = raw_module(_SOURCE, _NAMES)
_THREADS = 256                                  # RN_THREADS
_MAX_BLOCKS = 65535
_REQ = {"null": 0, "write": 1, "inplace": 2, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_rn", _SOURCE, tuple(_NAMES))]


def _geometry(norm, params, shape):
    outer, n, inner, per_row = norm.view(params, tuple(shape))
    eps = numpy.float64(numpy.float32(params["eps"]))
    return (numpy.int64(outer * inner), numpy.int64(n), numpy.int64(inner),
            numpy.int64(per_row), eps, numpy.int32(norm.save_var))


def forward(name):
    """The forward compute of ``name``: ``fn(params, inputs, outputs, reqs)``
    over CuPy arrays, on the current stream."""
    norm = NORMS[name]

    def run(params, inputs, outputs, reqs):
        x, gamma, beta = inputs
        y, mean, sd = outputs
        geo = _geometry(norm, params, x.shape)
        rows = int(geo[0])
        if rows == 0:
            return
        _kernel(f"mx_rn_forward<{_TYPES[x.dtype.name]}>")(
            (min(rows, _MAX_BLOCKS),), (_THREADS,),
            (x, gamma, beta, y, mean, sd, *geo,
             *(numpy.int32(_REQ[r]) for r in reqs)))
    return run


def backward(name):
    """The backward compute of ``name``, over CuPy arrays."""
    norm = NORMS[name]

    def run(params, inputs, outputs, reqs):
        dy, x, gamma, mean, saved = inputs
        dx, dgamma, dbeta = outputs
        geo = _geometry(norm, params, x.shape)
        rows, per_row = int(geo[0]), int(geo[3])
        t = _TYPES[x.dtype.name]
        row_sums = cupy.zeros(max(1, 2 * rows), cupy.float64)
        if rows and (per_row or reqs[0] != "null"):
            _kernel(f"mx_rn_backward<{t}>")(
                (min(rows, _MAX_BLOCKS),), (_THREADS,),
                (dy, x, gamma, mean, saved, dx, row_sums, *geo,
                 numpy.int32(_REQ[reqs[0]])))
        if gamma.size:
            _kernel(f"mx_rn_param_grad<{t}>")(
                ((gamma.size + _THREADS - 1) // _THREADS,), (_THREADS,),
                (dy, x, mean, saved, row_sums, dgamma, dbeta, *geo,
                 numpy.int32(_REQ[reqs[1]]), numpy.int32(_REQ[reqs[2]])))
    return run
