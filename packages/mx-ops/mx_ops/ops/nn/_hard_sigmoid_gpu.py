"""GPU compute of hard_sigmoid and _backward_hard_sigmoid: the formulas of
hard_sigmoid_cpu.h as grid-stride RawKernels.  Importing this module
without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import launch, raw_module

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

template <typename T>
__global__ void mx_hard_sigmoid(const T *x, T *y, long long n, float alpha, float beta,
                                int add) {
  typedef typename Acc<T>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const A z = (A)alpha * (A)x[i] + (A)beta;
    const A v = z < (A)0 ? (A)0 : (z > (A)1 ? (A)1 : z);
    y[i] = add ? T((A)y[i] + v) : T(v);
  }
}

template <typename T>
__global__ void mx_hard_sigmoid_grad(const T *dy, const T *x, T *dx, long long n, float alpha,
                                     float beta, int add) {
  typedef typename Acc<T>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const A z = (A)alpha * (A)x[i] + (A)beta;
    const A v = (z > (A)0 && z < (A)1) ? (A)dy[i] * (A)alpha : (A)0;
    dx[i] = add ? T((A)dx[i] + v) : T(v);
  }
}
"""
_TYPES = {"float16": "float16", "float32": "float", "float64": "double"}
_NAMES = [f"mx_hard_sigmoid{k}<{t}>" for t in _TYPES.values() for k in ("", "_grad")]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_hard_sigmoid", _SOURCE, tuple(_NAMES))]


def _ab(params):
    return numpy.float32(params["alpha"]), numpy.float32(params["beta"])


def forward(params, inputs, outputs, reqs):
    """hard_sigmoid's compute over CuPy arrays."""
    (x,), (y,) = inputs, outputs
    if reqs[0] != "null":
        launch(_kernel(f"mx_hard_sigmoid<{_TYPES[x.dtype.name]}>"), x.size,
               (x, y, numpy.int64(x.size), *_ab(params), numpy.int32(reqs[0] == "add")))


def backward(params, inputs, outputs, reqs):
    """_backward_hard_sigmoid's compute: (out_grad, data) -> data_grad."""
    (dy, x), (dx,) = inputs, outputs
    if reqs[0] != "null":
        launch(_kernel(f"mx_hard_sigmoid_grad<{_TYPES[x.dtype.name]}>"), x.size,
               (dy, x, dx, numpy.int64(x.size), *_ab(params), numpy.int32(reqs[0] == "add")))
