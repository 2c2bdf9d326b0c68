"""GPU compute of _contrib_quadratic (and its backward),
_contrib_div_sqrt_dim, _contrib_allclose, all_finite and multi_all_finite
with the semantics of contrib_math_cpu.h: ElementwiseKernels computing in
float (double for float64) with the float parameters as float and the
CPU's conversions (_device_code.INT_ARITH); allclose and the finiteness
checks as CuPy reductions in the same types.  Importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES
from mx_ops.core._device_code import INT_ARITH

_QUADRATIC = cupy.ElementwiseKernel(
    "T x, float32 a, float32 b, float32 c, int32 add", "T out",
    "typedef typename mx_float_of<T>::type F; const F v = F(x); "
    "const T r = mx_convert<T>(v * (F(a) * v + F(b)) + F(c)); "
    "out = add ? mx_wrap_add(out, r) : r;", "mx_quadratic", preamble=INT_ARITH)
_QUADRATIC_GRAD = cupy.ElementwiseKernel(
    "T g, T x, float32 a, float32 b, int32 add", "T out",
    "typedef typename mx_float_of<T>::type F; "
    "const T r = mx_convert<T>(F(g) * (F(2) * F(a) * F(x) + F(b))); "
    "out = add ? mx_wrap_add(out, r) : r;", "mx_quadratic_grad", preamble=INT_ARITH)
# s is the divisor, converted to T on the host side's rule.
_DIV = cupy.ElementwiseKernel(
    "T x, T s, int32 add", "T out",
    "const T r = mx_trunc_div(x, s); out = add ? mx_wrap_add(out, r) : r;",
    "mx_div_sqrt_dim", preamble=INT_ARITH)


def compile_cases():
    """(kind, label, kernel, in dtypes, out dtypes) for the NVRTC check."""
    f32, i32 = numpy.dtype("float32"), numpy.dtype("int32")
    cases = []
    for t in map(numpy.dtype, CTYPES):
        cases += [("elementwise", "mx_quadratic", _QUADRATIC, (t, f32, f32, f32, i32), (t,)),
                  ("elementwise", "mx_quadratic_grad", _QUADRATIC_GRAD, (t, t, f32, f32, i32),
                   (t,)),
                  ("elementwise", "mx_div_sqrt_dim", _DIV, (t, t, i32), (t,))]
    return cases


def _calc(dtype):
    """The dtype the CPU computes ``dtype`` in."""
    return numpy.float64 if dtype == numpy.float64 else numpy.float32


def quadratic(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _QUADRATIC(inputs[0], numpy.float32(params["a"]), numpy.float32(params["b"]),
                   numpy.float32(params["c"]), numpy.int32(reqs[0] == "add"), outputs[0])


def quadratic_backward(params, inputs, outputs, reqs):
    if reqs[0] != "null":
        _QUADRATIC_GRAD(inputs[0], inputs[1], numpy.float32(params["a"]),
                        numpy.float32(params["b"]), numpy.int32(reqs[0] == "add"), outputs[0])


def div_sqrt_dim(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x = inputs[0]
    d = x.shape[-1] if x.ndim else 1
    s = numpy.sqrt(_calc(x.dtype)(d)).astype(x.dtype)     # integers: its integer part
    _DIV(x, s, numpy.int32(reqs[0] == "add"), outputs[0])


def allclose(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    a, b = inputs
    calc = numpy.float64 if a.dtype.kind in "iu" else _calc(a.dtype)
    x, y = a.astype(calc), b.astype(calc)
    rtol, atol = calc(numpy.float32(params["rtol"])), calc(numpy.float32(params["atol"]))
    both_nan = cupy.isnan(x) & cupy.isnan(y) if params["equal_nan"] else False
    close = (x == y) | both_nan | (cupy.abs(x - y) <= atol + rtol * cupy.abs(y))
    flag = close.all().astype(numpy.uint8)
    out = outputs[0]
    out[...] = out + flag if reqs[0] == "add" else flag


def all_finite(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    finite = cupy.ones((), bool)
    for x in inputs:
        finite &= cupy.isfinite(x).all()
    out, flag = outputs[0], finite.astype(numpy.float32)
    if params["init_output"]:
        out[...] = out + flag if reqs[0] == "add" else flag
    else:
        out[...] = cupy.where(finite, out, numpy.float32(0))
