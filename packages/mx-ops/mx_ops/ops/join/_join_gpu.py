"""GPU compute of Concat and SliceChannel: the blocked copy of
join_cpu.h as one RawKernel launched per part.  Seen around the joined
axis every array is (outer, row); a part's rows sit at column ``off`` of the
whole array's rows, so one kernel serves both directions.  The axis comes
from the very JoinParam block mx_ops.ops.join.join packs for the CPU kernel.
Importing this module without CuPy raises ImportError."""
import math

import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

// Item i of a part of `n` items per row is column k = i % n of row
// o = i / n; in the whole array it is o * row + off + k.  `split` copies
// whole -> part (SliceChannel), else part -> whole (Concat).
template <typename T>
__global__ void mx_join(T *whole, T *part, long long count, long long n, long long row,
                        long long off, int split, int add) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)blockDim.x * gridDim.x) {
    const long long w = (i / n) * row + off + i % n;
    T *dst = split ? part + i : whole + w;
    const T v = split ? whole[w] : part[i];
    *dst = add ? T(*dst + v) : v;
  }
}
"""
_NAMES = [f"mx_join<{t}>" for t in CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_JOIN_T = numpy.dtype([("axis", "<i8")])      # mxop::JoinParam


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_join", _SOURCE, tuple(_NAMES))]


def _copy(whole, parts, axis, reqs, split):
    """join_loop of join_cpu.h; reqs holds one entry per written array."""
    if whole.size == 0:
        return
    outer = math.prod(whole.shape[:axis])
    row = whole.size // outer
    fn = _kernel(f"mx_join<{CTYPES[whole.dtype.name]}>")
    off = 0
    for k, part in enumerate(parts):
        n = part.size // outer
        r = reqs[k] if split else reqs[0]
        if n and r != "null":
            launch(fn, part.size, (whole, part, numpy.int64(part.size), numpy.int64(n),
                                   numpy.int64(row), numpy.int64(off), numpy.int32(split),
                                   numpy.int32(r == "add")))
        off += n


def _axis(pack, params, shape):
    return int(numpy.frombuffer(pack(params, [shape]), _JOIN_T)[0]["axis"])


def concat(pack):
    """Concat's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] != "null":
            _copy(outputs[0], inputs, _axis(pack, params, inputs[0].shape), reqs, False)
    return run


def split(pack):
    """SliceChannel's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        _copy(inputs[0], outputs, _axis(pack, params, inputs[0].shape), reqs, True)
    return run
