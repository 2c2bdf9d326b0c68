"""GPU compute of _ravel_multi_index and _unravel_index with the
semantics of ravel_cpu.h (Horner's rule truncated to int64 at every
step, by the CPU's conversion, _device_code.INT_ARITH; unravel leaves the
first axis unreduced); the
shape comes from the very block mx_ops.ops.index.ravel packs for the CPU,
copied to the device.  Importing this module without CuPy raises
ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

""" + INT_ARITH + r"""
// horner_step of ravel_cpu.h: int64(flat * s + x), the sum in T's
// arithmetic (float16: float; integers wrap in int64).
template <typename T> struct HornerSum { typedef float type; };
template <> struct HornerSum<double> { typedef double type; };
template <typename T>
__device__ inline long long horner_step(long long flat, long long s, T x) {
  typedef typename HornerSum<T>::type F;
  return mx_convert<long long>(F(mx_wrap_mul(flat, s)) + F(x));
}
#define MX_INT_HORNER(T) template <> __device__ inline long long horner_step<T>(     \
    long long flat, long long s, T x) { return mx_wrap_add(mx_wrap_mul(flat, s), (long long)x); }
MX_INT_HORNER(unsigned char)
MX_INT_HORNER(signed char)
MX_INT_HORNER(int)
MX_INT_HORNER(long long)

// in is (nd, n), out (n).
template <typename T>
__global__ void mx_ravel(const T *in, T *out, const long long *shape, long long nd,
                         long long n, int add) {
  MX_GRID_STRIDE(j, n) {
    long long flat = mx_convert<long long>(in[j]);
    for (long long d = 1; d < nd; ++d)
      flat = horner_step(flat, shape[d], in[d * n + j]);
    const T v = mx_convert<T>(flat);
    out[j] = add ? mx_wrap_add(out[j], v) : v;
  }
}

// in is (n), out (nd, n).
template <typename T>
__global__ void mx_unravel(const T *in, T *out, const long long *shape, long long nd,
                           long long n, int add) {
  MX_GRID_STRIDE(j, n) {
    long long rest = mx_convert<long long>(in[j]);
    for (long long d = nd - 1; d >= 0; --d) {
      const long long v = d == 0 ? rest : rest % shape[d];
      if (d > 0) rest /= shape[d];
      const T c = mx_convert<T>(v);
      out[d * n + j] = add ? mx_wrap_add(out[d * n + j], c) : c;
    }
  }
}
"""
_NAMES = [f"mx_{k}<{t}>" for k in ("ravel", "unravel") for t in CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_ravel", _SOURCE, tuple(_NAMES))]


def _compute(kind, pack):
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        block = numpy.frombuffer(pack(params, [inputs[0].shape]), numpy.int64)
        shape = cupy.asarray(block[1:])
        out = outputs[0]
        n = out.size if kind == "ravel" else inputs[0].size
        launch(_kernel(f"mx_{kind}<{CTYPES[out.dtype.name]}>"), n,
               (inputs[0], out, shape, numpy.int64(block[0]), numpy.int64(n),
                numpy.int32(reqs[0] == "add")))
    return run


def ravel(pack):
    """_ravel_multi_index's compute; ``pack`` is the op's pack_params."""
    return _compute("ravel", pack)


def unravel(pack):
    """_unravel_index's compute; ``pack`` is the op's pack_params."""
    return _compute("unravel", pack)
