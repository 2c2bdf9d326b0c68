"""GPU compute of _full (and _zeros, _ones), _arange (and _linspace), _eye
and Cast:
ElementwiseKernels with the conversions of init_cpu.h (the value is
cast to the dtype once; _arange computes in float64 and then converts;
req 'add' adds in the output dtype, wrapping integers).  Floats become
integers by the CPU's rule (_device_code.INT_ARITH's mx_convert: NaN and
values out of range give MIN), not by CUDA's saturating conversion.
Importing this module without CuPy raises ImportError."""
import itertools

import cupy
import numpy

from mx_ops.core._cuda import CTYPES
from mx_ops.core._device_code import INT_ARITH

_FULL = cupy.ElementwiseKernel(
    "float64 value, int32 add", "T out",
    "const T v = mx_convert<T>(value); out = add ? mx_wrap_add(out, v) : v;", "mx_full",
    preamble=INT_ARITH)
_ARANGE = cupy.ElementwiseKernel(
    "float64 start, float64 step, int64 repeat, int32 add", "T out",
    "const T v = mx_convert<T>(start + (double)(i / repeat) * step); "
    "out = add ? mx_wrap_add(out, v) : v;",
    "mx_arange", preamble=INT_ARITH)
# out is (N, M): one where column - row == k.
_EYE = cupy.ElementwiseKernel(
    "int64 cols, int64 k, int32 add", "T out",
    "const T v = mx_convert<T>(i % cols - i / cols == k ? 1.0 : 0.0); "
    "out = add ? mx_wrap_add(out, v) : v;",
    "mx_eye", preamble=INT_ARITH)
_CAST = cupy.ElementwiseKernel(
    "S x, int32 add", "D out",
    "const D v = mx_convert<D>(x); out = add ? mx_wrap_add(out, v) : v;", "mx_cast",
    preamble=INT_ARITH)


def compile_cases():
    """(kind, label, kernel, in dtypes, out dtypes) for the NVRTC check."""
    f64, i32 = numpy.dtype("float64"), numpy.dtype("int32")
    i64 = numpy.dtype("int64")
    cases = [("elementwise", "mx_full", _FULL, (f64, i32), (numpy.dtype(t),)) for t in CTYPES]
    cases += [("elementwise", "mx_arange", _ARANGE, (f64, f64, i64, i32), (numpy.dtype(t),))
              for t in CTYPES]
    cases += [("elementwise", "mx_eye", _EYE, (i64, i64, i32), (numpy.dtype(t),))
              for t in CTYPES]
    cases += [("elementwise", "mx_cast", _CAST, (numpy.dtype(s), i32), (numpy.dtype(d),))
              for s, d in itertools.product(CTYPES, CTYPES)]
    return cases


def full(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _FULL(params["value"], numpy.int32(reqs[0] == "add"), outputs[0])


def fill(value):
    """The compute of _zeros (0) and _ones (1): _full with a fixed value."""
    def run(params, inputs, outputs, reqs):
        full({"value": value}, inputs, outputs, reqs)
    return run


def arange(params, inputs, outputs, reqs):
    from mx_ops.ops.init.init import _range
    if reqs[0] != "null":
        start, _, step = _range(params)
        _ARANGE(start, step, numpy.int64(params["repeat"]), numpy.int32(reqs[0] == "add"),
                outputs[0])


def linspace(params, inputs, outputs, reqs):
    from mx_ops.ops.init.init import _linspace_step
    if reqs[0] != "null":
        _ARANGE(float(params["start"]), _linspace_step(params), numpy.int64(1),
                numpy.int32(reqs[0] == "add"), outputs[0])


def eye(params, inputs, outputs, reqs):
    from mx_ops.ops.init.init import eye_k
    if reqs[0] != "null":
        out = outputs[0]
        _EYE(numpy.int64(out.shape[1]), numpy.int64(eye_k(params)),
             numpy.int32(reqs[0] == "add"), out)


def cast(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _CAST(inputs[0], numpy.int32(reqs[0] == "add"), outputs[0])


def convert(x, dtype):
    """A new array of ``x`` converted to ``dtype`` by Cast's rule (CuPy's
    astype saturates floats into integers, where the CPU gives MIN)."""
    out = cupy.empty(x.shape, dtype)
    _CAST(x, numpy.int32(0), out)
    return out
