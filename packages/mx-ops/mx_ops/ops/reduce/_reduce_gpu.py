"""GPU compute of the reduction ops: CuPy reductions with the same
semantics as reduce_cpu.h -- floats accumulate in float64 (float16 in
float32), integers in int64; max/min propagate NaN; argmax/argmin return the
first occurrence (a NaN counts as the extreme); the result is cast to the
output dtype once (by Cast's rule: an integer norm out of range gives MIN),
and req 'add' adds in the accumulator type.  Importing
this module without CuPy raises ImportError, and the GPU computes are then
simply not registered."""
import cupy

from mx_ops.ops.init._init_gpu import convert
from mx_ops.ops.reduce import reduce as _reduce

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


def compile_cases():
    """None for the NVRTC check: CuPy's own reductions do the work."""
    return []


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
        r = _REDUCERS[name](x, axes, _acc(x.dtype, name in _FLOAT_ACC))
        _store(out, r, add)

    return run
