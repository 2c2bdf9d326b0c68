"""GPU compute of the optimizer update operators: optimizer_cpu.h's
per-element step as one templated RawKernel per (optimizer, dtype),
states written in place, the output (which may be the weight) stored per
req.  float16 computes in float, as on the CPU.  Importing this module
without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import OPT_STEP
from mx_ops.ops.optimizer.optimizer import KINDS, values

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
"""
_FLOATS = ("float16", "float32", "float64")
_NAMES = [f"mx_opt<{k}, {CTYPES[t]}>" for k in KINDS.values() for t in _FLOATS]
_kernel = raw_module(_SOURCE, _NAMES)
_STORE = {"null": 0, "write": 1, "inplace": 1, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_opt", _SOURCE, tuple(_NAMES))]


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
