"""GPU compute of moments and _backward_moments: the formulas of
moments_cpu.h as RawKernels.  One block per output element sums its
reduced elements (two passes, tree reductions in shared memory); the
backward is a grid-stride kernel over the data.  The merged dimensions
come from moments.merged_dims, as on the CPU.  Importing this module
without CuPy raises ImportError."""
import math

import cupy
import numpy

from mx_ops.core._cuda import launch, raw_module
from mx_ops.ops.norm.moments import merged_dims
from mx_ops.ops.reduce.reduce import MAX_DIM

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MOM_THREADS 256
#define MOM_MAX_DIM 8

template <typename T> struct Acc { typedef double type; };
template <> struct Acc<float16> { typedef float type; };

// The merged dimensions, innermost first, kept and reduced apart.
struct MomGeo {
  int nk, nr;
  long long ksize[MOM_MAX_DIM], kstride[MOM_MAX_DIM], rsize[MOM_MAX_DIM],
      rstride[MOM_MAX_DIM];
};

// From the packed int64 array (nk, nr, ksize[8], kstride[8], rsize[8], rstride[8]).
__device__ MomGeo mom_geo(const long long *p) {
  MomGeo g;
  g.nk = (int)p[0];
  g.nr = (int)p[1];
  for (int j = 0; j < MOM_MAX_DIM; ++j) {
    g.ksize[j] = p[2 + j];
    g.kstride[j] = p[2 + MOM_MAX_DIM + j];
    g.rsize[j] = p[2 + 2 * MOM_MAX_DIM + j];
    g.rstride[j] = p[2 + 3 * MOM_MAX_DIM + j];
  }
  return g;
}

__device__ long long mom_kept(const MomGeo &g, long long o) {
  long long off = 0;
  for (int j = 0; j < g.nk; ++j) {
    off += (o % g.ksize[j]) * g.kstride[j];
    o /= g.ksize[j];
  }
  return off;
}

__device__ long long mom_red(const MomGeo &g, long long t) {
  long long off = 0;
  for (int j = 0; j < g.nr; ++j) {
    off += (t % g.rsize[j]) * g.rstride[j];
    t /= g.rsize[j];
  }
  return off;
}

template <typename A> __device__ A mom_block_sum(A v, A *sh) {
  const int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (int s = MOM_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  const A r = sh[0];
  __syncthreads();
  return r;
}

template <typename T, typename A> __device__ void mom_put(T *out, long long i, A v, int req) {
  if (req == 3) out[i] = T((A)out[i] + v);
  else if (req != 0) out[i] = T(v);
}

template <typename T>
__global__ void mx_moments(const T *x, T *mean, T *var, const long long *geo, long long nout,
                           long long nred, int req_mean, int req_var) {
  typedef typename Acc<T>::type A;
  __shared__ A sh[MOM_THREADS];
  const MomGeo g = mom_geo(geo);
  for (long long o = blockIdx.x; o < nout; o += gridDim.x) {
    const long long b = mom_kept(g, o);
    A s = 0;
    for (long long t = threadIdx.x; t < nred; t += MOM_THREADS) s += (A)x[b + mom_red(g, t)];
    s = mom_block_sum(s, sh);
    const A n = (A)nred;
    const A m = s / n;            // an empty reduction gives NaN (0/0)
    A q = 0;
    for (long long t = threadIdx.x; t < nred; t += MOM_THREADS) {
      const A d = (A)x[b + mom_red(g, t)] - m;
      q += d * d;
    }
    q = mom_block_sum(q, sh);
    if (threadIdx.x == 0) {
      mom_put(mean, o, m, req_mean);
      mom_put(var, o, q / n, req_var);
    }
  }
}

// dx = (gm + 2 gv (x - mean)) / N for data element i (row-major).
template <typename T>
__global__ void mx_moments_backward(const T *gm, const T *gv, const T *x, const T *mean, T *dx,
                                    const long long *geo, long long size, long long nred,
                                    int add) {
  typedef typename Acc<T>::type A;
  const MomGeo g = mom_geo(geo);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < size;
       i += (long long)blockDim.x * gridDim.x) {
    // The output element of i: its kept coordinates, innermost first.
    long long o = 0, mul = 1;
    for (int j = 0; j < g.nk; ++j) {
      o += (i / g.kstride[j]) % g.ksize[j] * mul;
      mul *= g.ksize[j];
    }
    const A inv_n = (A)1 / (A)nred;
    const A v = ((A)gm[o] + (A)2 * (A)gv[o] * ((A)x[i] - (A)mean[o])) * inv_n;
    dx[i] = add ? T((A)dx[i] + v) : T(v);
  }
}
"""
_TYPES = {"float16": "float16", "float32": "float", "float64": "double"}
_NAMES = [f"mx_{k}<{t}>" for t in _TYPES.values() for k in ("moments", "moments_backward")]
_kernel = raw_module(_SOURCE, _NAMES)
_THREADS = 256
_REQ = {"null": 0, "write": 1, "inplace": 2, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_moments", _SOURCE, tuple(_NAMES))]


def _geometry(params, shape):
    """(the packed MomGeo as a device int64 array, outputs, reduced
    elements per output)."""
    dims, flags = merged_dims("moments", params, tuple(shape))
    sizes = {False: [], True: []}
    strides = {False: [], True: []}
    stride = 1
    for e, red in zip(reversed(dims), reversed(flags)):
        sizes[red].append(e)
        strides[red].append(stride)
        stride *= e
    pad = lambda v: v + [0] * (MAX_DIM - len(v))        # noqa: E731
    geo = ([len(sizes[False]), len(sizes[True])] + pad(sizes[False]) + pad(strides[False])
           + pad(sizes[True]) + pad(strides[True]))
    return (cupy.asarray(numpy.array(geo, numpy.int64)), math.prod(sizes[False]),
            math.prod(sizes[True]))


def forward(params, inputs, outputs, reqs):
    """moments' compute over CuPy arrays, on the current stream."""
    (x,), (mean, var) = inputs, outputs
    geo, nout, nred = _geometry(params, x.shape)
    if nout == 0:
        return
    _kernel(f"mx_moments<{_TYPES[x.dtype.name]}>")(
        (min(nout, 65535),), (_THREADS,),
        (x, mean, var, geo, numpy.int64(nout), numpy.int64(nred),
         numpy.int32(_REQ[reqs[0]]), numpy.int32(_REQ[reqs[1]])))


def backward(params, inputs, outputs, reqs):
    """_backward_moments' compute over CuPy arrays."""
    gm, gv, x, mean = inputs
    (dx,) = outputs
    if reqs[0] == "null":
        return
    geo, _, nred = _geometry(params, x.shape)
    launch(_kernel(f"mx_moments_backward<{_TYPES[x.dtype.name]}>"), x.size,
           (gm, gv, x, mean, dx, geo, numpy.int64(x.size), numpy.int64(nred),
            numpy.int32(reqs[0] == "add")))
