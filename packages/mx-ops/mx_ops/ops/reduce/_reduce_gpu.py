"""GPU compute of the reduction ops: CuPy reductions with the same
semantics as reduce_cpu.h -- floats accumulate in float64 (float16 in
float32), integers in int64; max/min propagate NaN; argmax/argmin return the
first occurrence (a NaN counts as the extreme); the result is cast to the
output dtype once (by Cast's rule: an integer norm out of range gives MIN),
and req 'add' adds in the accumulator type.  Importing
this module without CuPy raises ImportError, and the GPU computes are then
simply not registered."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, NN_HEAD, raw_module
from mx_ops.ops.init._init_gpu import convert
from mx_ops.ops.reduce import reduce as _reduce

# A whole contiguous array's sum (the commonest reduction: a loss, a metric)
# in one pass: each block sums a grid-stride share in the accumulator type,
# then the block partials are summed.  CuPy's own reduction with a wider
# accumulator (dtype=float64) does not take its CUB path and ran at a third
# of the memory bandwidth on an H200 (2**26 floats: 235 us, CUB's sum 68 us).
_SUM_ALL = NN_HEAD + r"""
template <typename T, typename A>
__global__ void mx_sum_all(const T *x, long long n, A *partial) {
  A acc = A(0);
  MX_GRID_STRIDE(i, n) acc += A(x[i]);
  acc = block_reduce(acc, SumOp(), A(0));
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}
"""
_SUM_ALL_TYPES = {"float32": "double", "float64": "double", "float16": "float"}
_ACC_DTYPES = {"double": numpy.float64, "float": numpy.float32}
_SUM_ALL_NAMES = [f"mx_sum_all<{CTYPES[t]}, {a}>" for t, a in _SUM_ALL_TYPES.items()]
_sum_all_kernel = raw_module(_SUM_ALL, _SUM_ALL_NAMES)
_SUM_ALL_MIN = 1 << 16          # below: CuPy's reduction (one launch, small)
_SUM_ALL_THREADS = 256
_SUM_ALL_BLOCKS = 1024          # enough to keep every multiprocessor's loads in flight

_FLOAT_ACC = ("norm1", "norm2")


def _acc(dtype, float_acc=False):
    if dtype == cupy.float16:
        return cupy.float32
    if dtype.kind == "f" or float_acc:
        return cupy.float64
    return cupy.int64


def _nan_to(x, value):
    return cupy.where(cupy.isnan(x), value, x) if x.dtype.kind == "f" else x


def _mean(x, axes, acc):
    s = _sum_all(x, acc) if len(set(axes)) == x.ndim else None
    if s is None:
        s = x.sum(axis=axes, dtype=acc, keepdims=True)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if acc == cupy.int64:   # the CPU's truncation: floor, + 1 where they differ
        return cupy.zeros_like(s) if n == 0 else s // n + ((s % n != 0) & (s < 0))
    return s / acc(n)


# kernel -> fn(x, axes, acc) -> result in acc with the reduced axes kept as 1
_REDUCERS = {
    "sum": lambda x, axes, acc: x.sum(axis=axes, dtype=acc, keepdims=True),
    "mean": _mean,
    "prod": lambda x, axes, acc: x.prod(axis=axes, dtype=acc, keepdims=True),
    "nansum": lambda x, axes, acc: _nan_to(x, 0).sum(axis=axes, dtype=acc, keepdims=True),
    "nanprod": lambda x, axes, acc: _nan_to(x, 1).prod(axis=axes, dtype=acc, keepdims=True),
    "max": lambda x, axes, acc: x.max(axis=axes, keepdims=True).astype(acc),
    "min": lambda x, axes, acc: x.min(axis=axes, keepdims=True).astype(acc),
    "norm1": lambda x, axes, acc: cupy.abs(x.astype(acc)).sum(axis=axes, keepdims=True),
    "norm2": lambda x, axes, acc: cupy.sqrt(cupy.square(x.astype(acc)).sum(axis=axes,
                                                                              keepdims=True)),
}


def _store(out, r, add):
    r = r.reshape(out.shape)
    if add and out.dtype.kind in "iu" and r.dtype.kind == "f":
        out += convert(r, out.dtype)       # as the CPU: convert, then add wrapping
    elif add:
        out[...] = convert(out.astype(r.dtype) + r, out.dtype)
    else:
        out[...] = convert(r, out.dtype)


def _search(x, axis, argmin):
    if axis is None or x.ndim == 0:
        x = x.reshape(-1)
        axis = 0
    return x.argmin(axis=axis) if argmin else x.argmax(axis=axis)


def _sum_all(x, acc):
    """The sum of every element of contiguous ``x`` in ``acc`` (shape (1,)),
    or None where this path does not apply."""
    name = x.dtype.name
    if (name not in _SUM_ALL_TYPES or x.size < _SUM_ALL_MIN or not x.flags.c_contiguous
            or _ACC_DTYPES[_SUM_ALL_TYPES[name]] != acc):
        return None
    blocks = min(_SUM_ALL_BLOCKS, -(-x.size // _SUM_ALL_THREADS))
    partial = cupy.empty(blocks, acc)
    kernel = _sum_all_kernel(f"mx_sum_all<{CTYPES[name]}, {_SUM_ALL_TYPES[name]}>")
    kernel((blocks,), (_SUM_ALL_THREADS,), (x, numpy.int64(x.size), partial))
    return partial.sum(keepdims=True)


def compile_cases():
    """The whole-array sum's kernel, for the NVRTC check (the other
    reductions are CuPy's own)."""
    return [("raw", "mx_sum_all", _SUM_ALL, tuple(_SUM_ALL_NAMES))]


def compute(kernel):
    """The GPU compute of a kernel: ``fn(params, inputs, outputs, reqs)`` over
    CuPy arrays, launched on the current stream."""

    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        x, out = inputs[0], outputs[0]
        add = reqs[0] == "add"
        if kernel in ("argmax", "argmin", "argmax_channel"):
            axis = 1 if kernel == "argmax_channel" else params["axis"]
            if out.size:
                idx = _search(x, axis, kernel == "argmin")
                _store(out, idx.astype(_acc(x.dtype)), add)
            return
        name = kernel if kernel != "norm" else f"norm{params['ord']}"
        axes = tuple(_reduce.reduced_axes(kernel, params, x.shape))
        acc = _acc(x.dtype, name in _FLOAT_ACC)
        r = _sum_all(x, acc) if name == "sum" and len(set(axes)) == x.ndim else None
        if r is None:
            r = _REDUCERS[name](x, axes, acc)
        _store(out, r, add)

    return run
