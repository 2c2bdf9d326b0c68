"""GPU compute of clip and where: ElementwiseKernels with the semantics of
select_cpu.h (the bounds are cast to the dtype by the CPU's rule,
_device_code.INT_ARITH; a 1-d condition picks whole rows; the condition may
have any dtype; req 'add' wraps integers).  Importing this module
without CuPy raises ImportError."""
import itertools

import cupy
import numpy

from mx_ops.core._cuda import CTYPES
from mx_ops.core._device_code import INT_ARITH

_CLIP = cupy.ElementwiseKernel(
    "T x, float64 a_min, float64 a_max, int32 add", "T out",
    """const T lo = mx_convert<T>(a_min), hi = mx_convert<T>(a_max);
       const T v = x < lo ? lo : (x > hi ? hi : x);
       out = add ? mx_wrap_add(out, v) : v;""", "mx_clip", preamble=INT_ARITH)
# `cond` is raw: with a 1-d condition one element serves `row` outputs.
_WHERE = cupy.ElementwiseKernel(
    "raw C cond, T x, T y, int64 row, int32 add", "T out",
    """const T v = cond[i / row] != (C)0 ? x : y;
       out = add ? mx_wrap_add(out, v) : v;""", "mx_where", preamble=INT_ARITH)


def compile_cases():
    """(kind, label, kernel, in dtypes, out dtypes) for the NVRTC check."""
    f64, i32, i64 = numpy.dtype("float64"), numpy.dtype("int32"), numpy.dtype("int64")
    cases = [("elementwise", "mx_clip", _CLIP, (numpy.dtype(t), f64, f64, i32),
              (numpy.dtype(t),)) for t in CTYPES]
    for c, t in itertools.product(CTYPES, CTYPES):
        t = numpy.dtype(t)
        cases.append(("elementwise", "mx_where", _WHERE, (numpy.dtype(c), t, t, i64, i32), (t,)))
    return cases


def clip(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _CLIP(inputs[0], params["a_min"], params["a_max"], numpy.int32(reqs[0] == "add"),
              outputs[0])


def where(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    cond, out = inputs[0], outputs[0]
    n, nc = out.size, cond.size
    row = 1 if nc in (n, 0) else n // nc
    _WHERE(cond.reshape(-1), inputs[1], inputs[2], numpy.int64(row),
           numpy.int32(reqs[0] == "add"), out)
