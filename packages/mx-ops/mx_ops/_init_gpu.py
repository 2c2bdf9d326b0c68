"""GPU compute of _full and Cast: ElementwiseKernels with the C conversions
of src/init_cpu.h (the value is cast to the dtype once; req 'add' adds in
the output dtype).  Importing this module without CuPy raises ImportError."""
import itertools

import cupy
import numpy

from mx_ops._cuda import CTYPES

_FULL = cupy.ElementwiseKernel(
    "float64 value, int32 add", "T out",
    "const T v = (T)value; out = add ? (T)(out + v) : v;", "mx_full")
_CAST = cupy.ElementwiseKernel(
    "S x, int32 add", "D out",
    "const D v = (D)x; out = add ? (D)(out + v) : v;", "mx_cast")


def compile_cases():
    """(kind, label, kernel, in dtypes, out dtypes) for the NVRTC check."""
    f64, i32 = numpy.dtype("float64"), numpy.dtype("int32")
    cases = [("elementwise", "mx_full", _FULL, (f64, i32), (numpy.dtype(t),)) for t in CTYPES]
    cases += [("elementwise", "mx_cast", _CAST, (numpy.dtype(s), i32), (numpy.dtype(d),))
              for s, d in itertools.product(CTYPES, CTYPES)]
    return cases


def full(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _FULL(params["value"], numpy.int32(reqs[0] == "add"), outputs[0])


def cast(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _CAST(inputs[0], numpy.int32(reqs[0] == "add"), outputs[0])
