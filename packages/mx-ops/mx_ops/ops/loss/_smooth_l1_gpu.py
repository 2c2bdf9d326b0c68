"""GPU twin of smooth_l1's SimpleOp functions (smooth_l1_cpu.h): the
same branches in a templated RawModule, one instantiation per float dtype,
float16 computing in float.  The functions take the SimpleOp signatures on
CuPy arrays and launch on the current stream (the engine worker's).
Importing this module without CuPy raises ImportError."""
import numpy

from mx_engine.base import MXNetError
from mx_ops.core._cuda import CTYPES, launch, raw_module

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

// mshadow_op's smooth_l1_loss and smooth_l1_gradient, as on the CPU.
template <typename A> __device__ A smooth_l1_value(A x, A s2) {
  if (x > A(1) / s2) return x - A(0.5) / s2;
  if (x < A(-1) / s2) return -x - A(0.5) / s2;
  return A(0.5) * x * x * s2;
}
template <typename A> __device__ A smooth_l1_slope(A x, A s2) {
  if (x > A(1) / s2) return A(1);
  if (x < A(-1) / s2) return A(-1);
  return s2 * x;
}

template <typename T>
__global__ void mx_smooth_l1(const T *x, T *y, long long n, double sigma, int add) {
  typedef typename Acc<T>::type A;
  const A s2 = A(sigma * sigma);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const A r = smooth_l1_value(A(x[i]), s2);
    y[i] = add ? T(A(y[i]) + r) : T(r);
  }
}

// dx may be g's memory (kInplaceOutIn): each thread reads its element first.
template <typename T>
__global__ void mx_smooth_l1_grad(const T *g, const T *x, T *dx, long long n, double sigma,
                                  int add) {
  typedef typename Acc<T>::type A;
  const A s2 = A(sigma * sigma);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const A r = A(g[i]) * smooth_l1_slope(A(x[i]), s2);
    dx[i] = add ? T(A(dx[i]) + r) : T(r);
  }
}
"""
_FLOATS = ("float32", "float64", "float16")
_NAMES = ([f"mx_smooth_l1<{CTYPES[t]}>" for t in _FLOATS]
          + [f"mx_smooth_l1_grad<{CTYPES[t]}>" for t in _FLOATS])
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_smooth_l1", _SOURCE, tuple(_NAMES))]


def _ctype(op, a):
    if a.dtype.name not in _FLOATS:
        raise MXNetError(f"{op}: unsupported dtype {a.dtype.name} (float16, float32 or "
                         f"float64)")
    return CTYPES[a.dtype.name]


def forward(src, env, ret, req, ctx):
    """smooth_l1's UnaryFunction on CuPy arrays."""
    if req == "null":
        return
    t = _ctype("smooth_l1", src)
    launch(_kernel(f"mx_smooth_l1<{t}>"), ret.size,
           (src, ret, numpy.int64(ret.size), numpy.float64(env.scalar),
            numpy.int32(req == "add")))


def backward(out_grad, in_data0, env, in_grad, req, ctx):
    """smooth_l1's UnaryGradFunctionT2 on CuPy arrays."""
    if req == "null":
        return
    t = _ctype("_backward_smooth_l1", in_data0)
    launch(_kernel(f"mx_smooth_l1_grad<{t}>"), in_grad.size,
           (out_grad, in_data0, in_grad, numpy.int64(in_grad.size),
            numpy.float64(env.scalar), numpy.int32(req == "add")))
