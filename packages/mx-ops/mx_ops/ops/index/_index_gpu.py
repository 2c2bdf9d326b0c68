"""GPU compute of take and one_hot with the semantics of index_cpu.h:
an index of any dtype is C-cast to int64 (floats truncate toward zero; NaN
and values out of range give INT64_MIN, _device_code.INT_ARITH), then
bounded by the mode; the parameters come from the very TakeParam and
OneHotParam blocks mx_ops.ops.index.index packs for the CPU kernels.  take's 'raise'
mode checks every index with a reduction before writing anything, as the
CPU kernel does.  Importing this module without CuPy raises ImportError."""
import itertools
import math

import cupy
import numpy

from mx_engine.base import MXNetError
from mx_ops.core._cuda import CTYPES, launch, raw_module, scatter_add
from mx_ops.core._device_code import INT_ARITH
from mx_ops.ops.init._init_gpu import convert

_HEAD = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

""" + INT_ARITH + r"""
// An index as the CPU converts it (x86-64's C cast to int64; float16
// through float).
template <typename I> __device__ inline long long as_index(I v) {
  return mx_convert<long long>(v);
}
"""

_TAKE = _HEAD + r"""
enum { TAKE_CLIP = 0, TAKE_WRAP = 1, TAKE_RAISE = 2 };   // mxop::TakeMode

// take_row of index_cpu.h; in raise mode every index is checked first.
__device__ inline long long take_row(long long j, long long n, int mode) {
  if (mode == TAKE_WRAP) { j %= n; return j < 0 ? j + n : j; }
  if (mode == TAKE_CLIP) return j < 0 ? 0 : (j >= n ? n - 1 : j);
  return j;
}

// An OR reduction into *bad: any index outside [0, n) sets it (every such
// thread stores the same 1, so the race is harmless).
template <typename I>
__global__ void mx_take_check(const I *idx, long long nidx, long long n, int *bad) {
  MX_GRID_STRIDE(k, nidx) {
    const long long j = as_index(idx[k]);
    if (j < 0 || j >= n) *bad = 1;
  }
}

// out is (outer, nidx, inner), a is (outer, n, inner).
template <typename I, typename T>
__global__ void mx_take(const T *a, const I *idx, T *out, long long total, long long nidx,
                        long long n, long long inner, int mode, int add) {
  MX_GRID_STRIDE(i, total) {
    const long long e = i % inner, rest = i / inner;
    const long long k = rest % nidx, o = rest / nidx;
    const T v = a[(o * n + take_row(as_index(idx[k]), n, mode)) * inner + e];
    out[i] = add ? mx_wrap_add(out[i], v) : v;
  }
}
"""

_ONE_HOT = _HEAD + r"""
// out is (nidx, depth); an index outside [0, depth) gives a row of off.
template <typename I, typename T>
__global__ void mx_one_hot(const I *idx, T *out, long long total, long long depth,
                           double on_value, double off_value, int add) {
  const T on = mx_convert<T>(on_value), off = mx_convert<T>(off_value);   // once, as the CPU
  MX_GRID_STRIDE(i, total) {
    const T v = i % depth == as_index(idx[i / depth]) ? on : off;
    out[i] = add ? mx_wrap_add(out[i], v) : v;
  }
}
"""
_PAIRS = list(itertools.product(CTYPES.values(), CTYPES.values()))
_TAKE_NAMES = ([f"mx_take_check<{i}>" for i in CTYPES.values()]
               + [f"mx_take<{i}, {t}>" for i, t in _PAIRS])
_ONE_HOT_NAMES = [f"mx_one_hot<{i}, {t}>" for i, t in _PAIRS]
_take_kernel = raw_module(_TAKE, _TAKE_NAMES)
_one_hot_kernel = raw_module(_ONE_HOT, _ONE_HOT_NAMES)

_TAKE_T = numpy.dtype([("axis", "<i8"), ("mode", "<i8")])                 # mxop::TakeParam
_ONE_HOT_T = numpy.dtype([("depth", "<i8"), ("on", "<f8"), ("off", "<f8")])  # OneHotParam
_RAISE = 2
# the CPU kernel's message (index_cpu.h) with the op's name, as invoke gives it
_RAISE_MSG = "take: argument 'indices' holds an index out of range of the axis (mode='raise')"


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_take", _TAKE, tuple(_TAKE_NAMES)),
            ("raw", "mx_one_hot", _ONE_HOT, tuple(_ONE_HOT_NAMES))]


def take(pack):
    """take's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        a, idx, out = inputs[0], inputs[1], outputs[0]
        p = numpy.frombuffer(pack(params, [a.shape, idx.shape]), _TAKE_T)[0]
        axis, mode = int(p["axis"]), int(p["mode"])
        n = a.shape[axis]
        if out.size == 0:
            return
        ti, ta = CTYPES[idx.dtype.name], CTYPES[a.dtype.name]
        if mode == _RAISE:
            bad = cupy.zeros((), numpy.int32)
            launch(_take_kernel(f"mx_take_check<{ti}>"), idx.size,
                   (idx, numpy.int64(idx.size), numpy.int64(n), bad))
            if int(bad):        # waits for the check: nothing is written on failure
                raise MXNetError(_RAISE_MSG)
        inner = math.prod(a.shape[axis + 1:])
        launch(_take_kernel(f"mx_take<{ti}, {ta}>"), out.size,
               (a, idx, out, numpy.int64(out.size), numpy.int64(idx.size), numpy.int64(n),
                numpy.int64(inner), numpy.int32(mode), numpy.int32(reqs[0] == "add")))
    return run


def one_hot(pack):
    """one_hot's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        idx, out = inputs[0], outputs[0]
        p = numpy.frombuffer(pack(params, [idx.shape]), _ONE_HOT_T)[0]
        fn = _one_hot_kernel(f"mx_one_hot<{CTYPES[idx.dtype.name]}, {CTYPES[out.dtype.name]}>")
        launch(fn, out.size, (idx, out, numpy.int64(out.size), numpy.int64(p["depth"]),
                              numpy.float64(p["on"]), numpy.float64(p["off"]),
                              numpy.int32(reqs[0] == "add")))
    return run


def take_backward(pack):
    """_backward_take's compute (take_grad_loop of index_cpu.h): zeros
    unless req is 'add', then every index's rows of the output gradient added
    to the row of 'a' it picked, bounded by the mode as the forward did
    ('raise' had checked them all); ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        g, idx, out = inputs[0], inputs[1], outputs[0]
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _TAKE_T)[0]
        axis, mode = int(p["axis"]), int(p["mode"])
        if reqs[0] != "add":
            out.fill(0)
        n = out.shape[axis]
        outer, inner = math.prod(out.shape[:axis]), math.prod(out.shape[axis + 1:])
        if outer * idx.size * inner == 0:
            return
        j = convert(idx, cupy.int64).reshape(-1)      # as_index: floats truncate
        rows = cupy.mod(j, n) if mode == 1 else cupy.clip(j, 0, n - 1)   # wrap, else clip
        where = (cupy.arange(outer)[:, None], rows[None, :])
        scatter_add(out.reshape(outer, n, inner), where, g.reshape(outer, idx.size, inner))
    return run
