"""GPU compute of _contrib_index_copy, its backward and
_contrib_index_array with the semantics of contrib_index_cpu.h: indices
C-cast to int64 by Cast's rule and checked before anything is written; the
row table (the last row of new_tensor going to each output row) built
with 64-bit atomicMax; the rest CuPy array operations.  Importing this
module without CuPy raises ImportError."""
import math

import cupy
import numpy

from mx_engine.base import MXNetError
from mx_ops.core._cuda import launch, raw_module
from mx_ops.ops.init._init_gpu import convert

_SOURCE = r"""
#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

// src[to[i]] = the largest such i (src starts at -1).
extern "C" __global__ void mx_index_rows(const long long *to, long long n, long long *src) {
  MX_GRID_STRIDE(i, n) atomicMax(src + to[i], i);
}
"""
_kernel = raw_module(_SOURCE, ())
_RANGE_MSG = ("argument 'index_vector' holds an index out of range of the rows of "
              "'old_tensor'")


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_index_rows", _SOURCE, ())]


def _rows(op, index, rows):
    """(the indices as int64, the row table), or MXNetError out of range."""
    to = convert(index, cupy.int64).reshape(-1)
    if to.size and bool(((to < 0) | (to >= rows)).any()):
        raise MXNetError(f"{op}: {_RANGE_MSG}")
    src = cupy.full(rows, -1, cupy.int64)
    launch(_kernel("mx_index_rows"), to.size, (to, numpy.int64(to.size), src))
    return to, src


def _store(out, value, req):
    if req == "add":
        out += value.astype(out.dtype, copy=False)
    elif req != "null":
        out[...] = value


def index_copy(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    old, idx, new = inputs
    rows = old.shape[0]
    _, src = _rows("_contrib_index_copy", idx, rows)
    flat_old, flat_new = old.reshape(rows, -1), new.reshape(new.shape[0], -1)
    picked = flat_new[cupy.maximum(src, 0)] if new.shape[0] else flat_old
    value = cupy.where((src >= 0)[:, None], picked, flat_old).reshape(old.shape)
    _store(outputs[0], value, reqs[0])


def index_copy_backward(params, inputs, outputs, reqs):
    g, idx = inputs
    rows = g.shape[0]
    to, src = _rows("_contrib_backward_index_copy", idx, rows)
    flat = g.reshape(rows, -1)
    _store(outputs[0], cupy.where((src >= 0)[:, None], 0, flat).astype(g.dtype).reshape(g.shape),
           reqs[0])
    _store(outputs[1], flat[to].reshape(outputs[1].shape), reqs[1])


def index_array(pack):
    """_contrib_index_array's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        block = numpy.frombuffer(pack(params, [inputs[0].shape]), numpy.int64)
        nd = int(block[0])
        shape, axes = tuple(int(s) for s in block[1:1 + nd]), block[2 + nd:]
        grids = cupy.indices(shape, dtype=cupy.int64) if math.prod(shape) else \
            cupy.zeros((nd,) + shape, cupy.int64)
        value = cupy.stack([grids[int(a)] for a in axes], axis=-1) if len(axes) else \
            cupy.zeros(shape + (0,), cupy.int64)
        _store(outputs[0], value, reqs[0])
    return run
