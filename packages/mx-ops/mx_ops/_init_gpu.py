"""GPU compute of _full (and _zeros, _ones), _arange and Cast:
ElementwiseKernels with the C conversions of src/init_cpu.h (the value is
cast to the dtype once; _arange computes in float64 and then converts;
req 'add' adds in the output dtype).  Importing this module without CuPy
raises ImportError."""
import itertools

import cupy
import numpy

from mx_ops._cuda import CTYPES

_FULL = cupy.ElementwiseKernel(
    "float64 value, int32 add", "T out",
    "const T v = (T)value; out = add ? (T)(out + v) : v;", "mx_full")
_ARANGE = cupy.ElementwiseKernel(
    "float64 start, float64 step, int64 repeat, int32 add", "T out",
    "const T v = (T)(start + (double)(i / repeat) * step); out = add ? (T)(out + v) : v;",
    "mx_arange")
_CAST = cupy.ElementwiseKernel(
    "S x, int32 add", "D out",
    "const D v = (D)x; out = add ? (D)(out + v) : v;", "mx_cast")


def compile_cases():
    """(kind, label, kernel, in dtypes, out dtypes) for the NVRTC check."""
    f64, i32 = numpy.dtype("float64"), numpy.dtype("int32")
    i64 = numpy.dtype("int64")
    cases = [("elementwise", "mx_full", _FULL, (f64, i32), (numpy.dtype(t),)) for t in CTYPES]
    cases += [("elementwise", "mx_arange", _ARANGE, (f64, f64, i64, i32), (numpy.dtype(t),))
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
    from mx_ops.init import _range
    if reqs[0] != "null":
        start, _, step = _range(params)
        _ARANGE(start, step, numpy.int64(params["repeat"]), numpy.int32(reqs[0] == "add"),
                outputs[0])


def cast(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _CAST(inputs[0], numpy.int32(reqs[0] == "add"), outputs[0])
