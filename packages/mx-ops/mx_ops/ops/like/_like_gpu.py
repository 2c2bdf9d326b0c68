"""GPU compute of _collapse_sum_like: CuPy's sum over the axes that
mx_ops.ops.like.like.collapse_axes finds from the shapes (the very axes the CPU
kernel's packed parameters list), accumulated as ops/reduce/reduce_cpu.h does
(floats in float64, float16 in float32, integers in int64), cast once.  The
other like-ops run the copy, gather and cast twins of _shape_gpu and
_init_gpu.  Importing this module without CuPy raises ImportError."""
from mx_ops.ops.like.like import collapse_axes
from mx_ops.ops.reduce import _reduce_gpu


def compile_cases():
    """No kernel sources of this module's own for the NVRTC check: the sum
    is CuPy's."""
    return []


def collapse_sum(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x, out = inputs[0], outputs[0]
    axes = tuple(collapse_axes("_collapse_sum_like", x.shape, inputs[1].shape))
    r = x.sum(axis=axes, dtype=_reduce_gpu._acc(x.dtype), keepdims=True)
    _reduce_gpu._store(out, r, reqs[0] == "add")
