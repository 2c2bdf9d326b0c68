"""GPU compute of BatchNorm, BatchNorm_v1 and their backward: the formulas
of batch_norm_cpu.h as RawKernels.  One block per channel sums that
channel's (outer, inner) plane in double (tree reduction in shared memory),
derives the channel's coefficients and, in the forward training pass,
updates the moving statistics; a grid-stride kernel then writes every
element.  Sums run in a different order than on the CPU, so the two agree
to rounding.  Importing this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import launch, raw_module
from mx_ops.ops.norm.batch_norm import geometry

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define BN_THREADS 256

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

template <typename T> __device__ double bn_ld(T v) {
  return (double)(typename Acc<T>::type)v;
}

// req codes: 0 null, 1 write, 2 inplace, 3 add (MXNet's OpReqType).
template <typename P> __device__ void bn_put(P *out, long long i, double v, int req) {
  if (req == 3) out[i] = P((double)out[i] + v);
  else if (req != 0) out[i] = P(v);
}

// The sum of every thread's v in the block (all BN_THREADS threads call it).
__device__ double bn_block_sum(double v, double *sh) {
  const int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (int s = BN_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

// Index of item k (0 .. outer*inner) of channel c.
__device__ long long bn_at(long long k, long long c, long long chans, long long inner) {
  return ((k / inner) * chans + c) * inner + k % inner;
}

// Block c: channel c's mean and inverse std (batch statistics when `batch`,
// else the moving ones), the moving-statistics update, the mean and var
// outputs, and coef = (mean, invstd * gamma, beta) for bn_apply.
template <typename T, typename P>
__global__ void mx_bn_stats(const T *x, const P *gamma, const P *beta, P *mmean, P *mvar,
                            P *omean, P *ovar, double *coef, long long outer,
                            long long chans, long long inner, double eps, double momentum,
                            int fix_gamma, int batch, int req_mean, int req_var, int v1) {
  __shared__ double sh[BN_THREADS];
  const long long c = blockIdx.x, count = outer * inner;
  double mean, invstd, var = 0;
  if (batch) {
    double s = 0;
    for (long long k = threadIdx.x; k < count; k += BN_THREADS)
      s += bn_ld(x[bn_at(k, c, chans, inner)]);
    mean = count ? bn_block_sum(s, sh) / (double)count : 0.0;
    double q = 0;
    for (long long k = threadIdx.x; k < count; k += BN_THREADS) {
      const double d = bn_ld(x[bn_at(k, c, chans, inner)]) - mean;
      q += d * d;
    }
    const double sum = bn_block_sum(q, sh);
    var = count ? sum / (double)count : 0.0;
    invstd = (sum == 0 && eps == 0) ? 0.0 : 1.0 / sqrt(var + eps);
  } else {
    mean = (double)mmean[c];
    var = (double)mvar[c];
    invstd = 1.0 / sqrt(var + eps);
  }
  if (threadIdx.x == 0) {
    if (batch && count && !v1) {
      mmean[c] = P((double)mmean[c] * momentum + mean * (1 - momentum));
      mvar[c] = P((double)mvar[c] * momentum + var * (1 - momentum));
    }
    bn_put(omean, c, mean, req_mean);
    bn_put(ovar, c, v1 ? var : invstd, req_var);   // BatchNorm_v1 saves the variance
    coef[c] = mean;
    coef[chans + c] = invstd * (fix_gamma ? 1.0 : (double)gamma[c]);
    coef[2 * chans + c] = (double)beta[c];
  }
}

// y = (x - mean) * scale + shift per channel, req 'add' adding.
template <typename T>
__global__ void mx_bn_apply(const T *x, T *y, const double *coef, long long n,
                            long long chans, long long inner, int add) {
  typedef typename Acc<T>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const long long c = (i / inner) % chans;
    const A v = ((A)x[i] - (A)coef[c]) * (A)coef[chans + c] + (A)coef[2 * chans + c];
    y[i] = add ? T((A)y[i] + v) : T(v);
  }
}

// Block c of the backward pass: sums of dy and (x - mean) * dy, the gamma
// and beta gradients, and coef = (mean, k0, k1, k2) for bn_dx.
template <typename T, typename P>
__global__ void mx_bn_grad_stats(const T *dy, const T *x, const P *smean, const P *sinvstd,
                                 const P *gamma, P *mmean, P *mvar, P *dgamma,
                                 P *dbeta, double *coef, long long outer, long long chans,
                                 long long inner, double eps, double momentum, int fix_gamma,
                                 int batch, int req_gamma, int req_beta, int v1) {
  __shared__ double sh[BN_THREADS];
  const long long c = blockIdx.x, count = outer * inner;
  const double mean = batch ? (double)smean[c] : (double)mmean[c];
  const double sv = (double)sinvstd[c];
  const double invstd = !batch ? 1.0 / sqrt((double)mvar[c] + eps)
                        : v1 ? 1.0 / sqrt(sv + eps) : sv;
  double s = 0, d = 0, e = 0;
  for (long long k = threadIdx.x; k < count; k += BN_THREADS) {
    const long long i = bn_at(k, c, chans, inner);
    const double g = bn_ld(dy[i]), xc = bn_ld(x[i]) - mean;
    s += g;
    d += xc * g;
    e += xc;
  }
  const double sg = bn_block_sum(s, sh), dotp = bn_block_sum(d, sh);
  // BatchNorm_v1's term in dev = sum(x - mean) (see batch_norm_cpu.h).
  const double dev = (v1 && batch) ? bn_block_sum(e, sh) : 0.0;
  if (threadIdx.x == 0) {
    if (v1 && batch && count) {       // BatchNorm_v1 moves its statistics here
      mmean[c] = P((double)mmean[c] * momentum + mean * (1 - momentum));
      mvar[c] = P((double)mvar[c] * momentum + sv * (1 - momentum));
    }
    const double n = count ? (double)count : 1.0;
    const double w = fix_gamma ? 1.0 : (double)gamma[c];
    bn_put(dgamma, c, fix_gamma ? 0.0 : dotp * invstd, req_gamma);
    bn_put(dbeta, c, sg, req_beta);
    coef[c] = mean;
    coef[chans + c] = batch ? sg / n - dotp * invstd * invstd * dev / (n * n) : 0.0;
    coef[2 * chans + c] = batch ? dotp * invstd * invstd / n : 0.0;
    coef[3 * chans + c] = invstd * w;
  }
}

// dx = (dy - k0 - (x - mean) * k1) * k2 per channel, req 'add' adding.
template <typename T>
__global__ void mx_bn_dx(const T *dy, const T *x, T *dx, const double *coef, long long n,
                         long long chans, long long inner, int add) {
  typedef typename Acc<T>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const long long c = (i / inner) % chans;
    const A v = ((A)dy[i] - (A)coef[chans + c] - ((A)x[i] - (A)coef[c]) * (A)coef[2 * chans + c])
                * (A)coef[3 * chans + c];
    dx[i] = add ? T((A)dx[i] + v) : T(v);
  }
}
"""
# (data type, statistics type): float16 data keeps float32 statistics.
_TYPES = {"float16": ("float16", "float"), "float32": ("float", "float"),
          "float64": ("double", "double")}
_NAMES = [name for t, p in _TYPES.values()
          for name in (f"mx_bn_stats<{t}, {p}>", f"mx_bn_apply<{t}>",
                       f"mx_bn_grad_stats<{t}, {p}>", f"mx_bn_dx<{t}>")]
_kernel = raw_module(_SOURCE, _NAMES)
_THREADS = 256                                  # BN_THREADS
_REQ = {"null": 0, "write": 1, "inplace": 2, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_bn", _SOURCE, tuple(_NAMES))]


def _i64(*values):
    return [numpy.int64(v) for v in values]


def _v1_params(params):
    return dict(params, axis=1, eps=float(numpy.float32(params["eps"])))


def forward(params, inputs, outputs, reqs, v1=False):
    """BatchNorm's compute: ``fn(params, inputs, outputs, reqs)`` over CuPy
    arrays, on the current stream."""
    x, gamma, beta, mmean, mvar = inputs
    y, omean, ovar = outputs
    outer, chans, inner = geometry("BatchNorm", params, x.shape)
    t, p = _TYPES[x.dtype.name]
    batch = bool(params["_is_train"]) and not params["use_global_stats"]
    if chans == 0:
        return
    coef = cupy.empty(3 * chans, cupy.float64)
    _kernel(f"mx_bn_stats<{t}, {p}>")(
        (chans,), (_THREADS,),
        (x, gamma, beta, mmean, mvar, omean, ovar, coef, *_i64(outer, chans, inner),
         numpy.float64(params["eps"]), numpy.float64(numpy.float32(params["momentum"])),
         numpy.int32(params["fix_gamma"]), numpy.int32(batch), numpy.int32(_REQ[reqs[1]]),
         numpy.int32(_REQ[reqs[2]]), numpy.int32(v1)))
    if reqs[0] != "null":
        launch(_kernel(f"mx_bn_apply<{t}>"), x.size,
               (x, y, coef, *_i64(x.size, chans, inner), numpy.int32(reqs[0] == "add")))


def backward(params, inputs, outputs, reqs, v1=False):
    """_backward_BatchNorm's compute, over CuPy arrays."""
    dy, smean, sinvstd, x, gamma, _beta, mmean, mvar = inputs
    dx, dgamma, dbeta = outputs
    outer, chans, inner = geometry("_backward_BatchNorm", params, x.shape)
    t, p = _TYPES[x.dtype.name]
    batch = bool(params["_is_train"]) and not params["use_global_stats"]
    if chans == 0:
        return
    coef = cupy.empty(4 * chans, cupy.float64)
    _kernel(f"mx_bn_grad_stats<{t}, {p}>")(
        (chans,), (_THREADS,),
        (dy, x, smean, sinvstd, gamma, mmean, mvar, dgamma, dbeta, coef,
         *_i64(outer, chans, inner), numpy.float64(params["eps"]),
         numpy.float64(numpy.float32(params["momentum"])), numpy.int32(params["fix_gamma"]),
         numpy.int32(batch), numpy.int32(_REQ[reqs[1]]), numpy.int32(_REQ[reqs[2]]),
         numpy.int32(v1)))
    if reqs[0] != "null":
        launch(_kernel(f"mx_bn_dx<{t}>"), x.size,
               (dy, x, dx, coef, *_i64(x.size, chans, inner), numpy.int32(reqs[0] == "add")))


def forward_v1(params, inputs, outputs, reqs):
    """BatchNorm_v1's compute: BatchNorm's with its conventions."""
    forward(_v1_params(params), inputs, outputs, reqs, v1=True)


def backward_v1(params, inputs, outputs, reqs):
    """_backward_BatchNorm_v1's compute."""
    backward(_v1_params(params), inputs, outputs, reqs, v1=True)
