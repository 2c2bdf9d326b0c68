"""GPU compute of _backward_SVMOutput: svm_cpu.h's formula as a
grid-stride RawKernel over the output's elements.  Importing this module
without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import launch, raw_module

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

template <typename T>
__global__ void mx_svm_bwd(const T *label, const T *out, T *dx, long long n, long long cols,
                           double margin, double coef, int use_linear, int add) {
  typedef typename Acc<T>::type A;
  const A m = (A)T(margin), c = (A)T(coef);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const long long y = i / cols, x = i % cols, k = (int)(A)label[y];
    const A v = (A)out[i];
    A g;
    if (use_linear) g = x == k ? -(A)(m > v) * c : (A)(m > -v) * c;
    else g = x == k ? (m > v ? (A)2 * (m - v) : (A)0) * -c
                    : (m > -v ? (A)-2 * (m + v) : (A)0) * -c;
    dx[i] = add ? T((A)dx[i] + g) : T(g);
  }
}
"""
_TYPES = {"float16": "float16", "float32": "float", "float64": "double"}
_NAMES = [f"mx_svm_bwd<{t}>" for t in _TYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_svm", _SOURCE, tuple(_NAMES))]


def backward(params, inputs, outputs, reqs):
    """_backward_SVMOutput: (label, out_data) -> (data_grad, label_grad = 0)."""
    label, out = inputs
    dx, dlabel = outputs
    if reqs[0] != "null" and dx.size:
        launch(_kernel(f"mx_svm_bwd<{_TYPES[out.dtype.name]}>"), dx.size,
               (label, out, dx, numpy.int64(dx.size), numpy.int64(out.shape[-1]),
                *(numpy.float64(numpy.float32(params[k]))      # float32 fields in MXNet
                  for k in ("margin", "regularization_coefficient")),
                numpy.int32(params["use_linear"]), numpy.int32(reqs[0] == "add")))
    if reqs[1] not in ("null", "add"):
        dlabel.fill(0)
