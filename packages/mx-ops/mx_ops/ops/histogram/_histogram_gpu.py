"""GPU compute of _histogram with the semantics of histogram_cpu.h: the
same edges (uniform ones computed in float64, then converted by Cast's
rule), the same bin of every value (one thread each, counted with 64-bit
atomics), from the HistogramParam block mx_ops.ops.histogram.histogram
packs for the CPU.  Importing this module without CuPy raises
ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH
from mx_ops.ops.init._init_gpu import convert

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

""" + INT_ARITH + r"""
// uniform_bin and edges_bin of histogram_cpu.h.
template <typename T>
__device__ long long mx_bin(T x, const T *e, long long cnt, int uniform, double lo, double hi) {
  if (uniform) {
    const double v = mx_convert<double>(x);
    if (!(v >= lo && v <= hi)) return -1;
    const double q = (v - lo) * (double)cnt / (hi - lo);   // >= 0
    long long t = q < (double)(cnt - 1) ? (long long)q : cnt - 1;
    if (x < e[t]) --t;
    if (t < cnt - 1 && x >= e[t + 1]) ++t;
    return t;
  }
  if (!(x >= e[0] && x <= e[cnt])) return -1;
  long long a = 0, b = cnt + 1;            // the first edge above x: upper_bound
  while (a < b) {
    const long long m = (a + b) / 2;
    if (x < e[m]) b = m; else a = m + 1;
  }
  return a - 1 < cnt ? a - 1 : cnt - 1;
}

template <typename T>
__global__ void mx_histogram(const T *x, long long n, const T *e, long long cnt, int uniform,
                             double lo, double hi, unsigned long long *counts) {
  MX_GRID_STRIDE(i, n) {
    const long long t = mx_bin(x[i], e, cnt, uniform, lo, hi);
    if (t >= 0 && t < cnt) atomicAdd(counts + t, 1ULL);
  }
}
"""
_NAMES = [f"mx_histogram<{t}>" for t in CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_PARAM_T = numpy.dtype([("cnt", "<i8"), ("lo", "<f8"), ("hi", "<f8")])   # HistogramParam


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_histogram", _SOURCE, tuple(_NAMES))]


def histogram(pack):
    """_histogram's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null" and reqs[1] == "null":
            return
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _PARAM_T)[0]
        x = inputs[0]
        cnt, lo, hi = int(p["cnt"]), float(p["lo"]), float(p["hi"])
        uniform = cnt > 0
        if uniform:
            i = cupy.arange(cnt + 1, dtype=numpy.float64)
            edges = convert((lo * (cnt - i) + hi * i) / cnt, x.dtype)
        else:
            edges = cupy.ascontiguousarray(inputs[1])
            cnt = edges.size - 1
        counts = cupy.zeros(cnt, numpy.uint64)
        launch(_kernel(f"mx_histogram<{CTYPES[x.dtype.name]}>"), x.size,
               (x, numpy.int64(x.size), edges, numpy.int64(cnt), numpy.int32(uniform),
                numpy.float64(lo), numpy.float64(hi), counts))
        for out, value, req in ((outputs[0], counts.view(numpy.int64), reqs[0]),
                                (outputs[1], edges, reqs[1])):
            if req == "add":
                out += value
            elif req != "null":
                out[...] = value
    return run
