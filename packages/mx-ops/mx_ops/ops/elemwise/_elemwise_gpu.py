"""GPU compute of the elementwise ops: CuPy ElementwiseKernels with the same
expressions as elemwise_cpu.h, built on first use and cached (CuPy
compiles each once per dtype).  float16 computes in float, as on the CPU.
Importing this module without CuPy raises ImportError, and the GPU computes
are then simply not registered."""
import functools
import itertools

import cupy
import numpy

from mx_ops.core._cuda import CTYPES
from mx_ops.core._device_code import INT_ARITH

# mod_op, div_op and pow_op of elemwise_cpu.h: integers through
# INT_ARITH (no value traps; MIN / -1 wraps), floats as the CPU computes them.
_PREAMBLE = INT_ARITH + r"""
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };
template <typename A> __device__ A mx_mod(A a, A b) {
  if constexpr (mx_int_of<A>::ok) {
    return mx_int_mod(a, b);
  } else {
    if (b == A(0)) return A(0);
    A r = fmod(a, b);
    if (r != A(0) && ((r < A(0)) != (b < A(0)))) r += b;
    return r;
  }
}
template <typename A> __device__ A mx_div(A a, A b) {
  if constexpr (mx_int_of<A>::ok) return mx_int_div(a, b);
  else return a / b;
}
template <typename A> __device__ A mx_pow(A a, A b) {
  if constexpr (mx_int_of<A>::ok) return mx_int_pow(a, b);
  else return A(pow((double)a, (double)b));
}
// digamma of elemwise_cpu.h, step for step (in double).
__device__ double mx_digamma(double x) {
  if (isnan(x) || isinf(x)) return x > 0 ? x : nan("");
  double result = 0.0;
  if (x <= 0.0) {
    const double r = x - floor(x);
    if (r == 0.0) return nan("");
    result = -3.141592653589793 / tan(3.141592653589793 * r);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  const double tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240
                      - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return result + log(x) - 0.5 / x - tail;
}
"""

UNARY = {
    "negative": "mx_wrap_neg(x)", "abs": "mx_wrap_abs(x)", "sign": "A((x > A(0)) - (x < A(0)))",
    "square": "mx_wrap_mul(x, x)", "relu": "(x > A(0) ? x : A(0))", "copy": "x",
    "exp": "exp(x)", "expm1": "expm1(x)", "log": "log(x)", "log1p": "log1p(x)",
    "log2": "log2(x)", "log10": "log10(x)", "sqrt": "sqrt(x)", "rsqrt": "A(1) / sqrt(x)",
    "cbrt": "cbrt(x)", "rcbrt": "A(1) / cbrt(x)", "reciprocal": "A(1) / x",
    "sin": "sin(x)", "cos": "cos(x)", "tan": "tan(x)", "arcsin": "asin(x)",
    "arccos": "acos(x)", "arctan": "atan(x)", "sinh": "sinh(x)", "cosh": "cosh(x)",
    "tanh": "tanh(x)", "arcsinh": "asinh(x)", "arccosh": "acosh(x)", "arctanh": "atanh(x)",
    "sigmoid": "A(1) / (A(1) + exp(-x))", "softsign": "x / (A(1) + fabs(x))",
    "degrees": "A(x * A(57.29577951308232))", "radians": "A(x * A(0.017453292519943295))",
    "erf": "erf(x)", "erfinv": "A(erfinv((double)x))", "logical_not": "A(x == A(0))",
    "gamma": "tgamma(x)", "gammaln": "lgamma(x)", "round": "round(x)",
    "rint": "rint(x)", "floor": "floor(x)", "ceil": "ceil(x)", "trunc": "trunc(x)",
    "fix": "trunc(x)",
}

BINARY = {
    "add": "mx_wrap_add(a, b)", "sub": "mx_wrap_sub(a, b)", "mul": "mx_wrap_mul(a, b)",
    "div": "mx_div<A>(a, b)", "mod": "mx_mod<A>(a, b)", "power": "mx_pow<A>(a, b)",
    "maximum": "(a > b ? a : b)", "minimum": "(a < b ? a : b)",
    "hypot": "mx_convert<A>(hypot((double)a, (double)b))", "equal": "A(a == b)",
    "not_equal": "A(a != b)", "greater": "A(a > b)", "greater_equal": "A(a >= b)",
    "lesser": "A(a < b)", "lesser_equal": "A(a <= b)",
    "logical_and": "A((a != A(0)) && (b != A(0)))",
    "logical_or": "A((a != A(0)) || (b != A(0)))",
    "logical_xor": "A((a != A(0)) != (b != A(0)))",
}

# The _backward_<op> kernels of unary ops (out = f(ograd a, input b)), as
# MX_BACKWARD of elemwise_cpu.h; floating-point dtypes only.
BACKWARD = {
    "gamma": "a * A(tgamma((double)b) * mx_digamma((double)b))",
    "gammaln": "a * A(mx_digamma((double)b))",
}
_BINARY_FAMILIES = {"binary": BINARY, "backward": BACKWARD}

_ACC = "typedef typename Acc<T>::type A; "
_STORE = "out = add ? (T)mx_wrap_add((A)out, r) : (T)r;"


@functools.cache
def _kernel(family, name):
    if family == "unary":
        body = f"{_ACC} A x = (A)in; A r = (A)({UNARY[name]}); {_STORE}"
        return cupy.ElementwiseKernel("T in, bool add", "T out", body, f"mx_{name}",
                                      preamble=_PREAMBLE)
    if family in _BINARY_FAMILIES:
        expr = _BINARY_FAMILIES[family][name]
        body = f"{_ACC} A a = (A)lhs; A b = (A)rhs; A r = (A)({expr}); {_STORE}"
        tag = "b" if family == "binary" else "bw"
        return cupy.ElementwiseKernel("T lhs, T rhs, bool add", "T out", body,
                                      f"mx_{tag}_{name}", preamble=_PREAMBLE)
    swap = family == "rscalar"
    # the scalar becomes the array's dtype first, by the CPU's rule
    a, b = ("mx_convert<A>(s)", "(A)in") if swap else ("(A)in", "mx_convert<A>(s)")
    body = f"{_ACC} A a = {a}; A b = {b}; A r = (A)({BINARY[name]}); {_STORE}"
    return cupy.ElementwiseKernel("T in, float64 s, bool add", "T out", body,
                                  f"mx_{family}_{name}", preamble=_PREAMBLE)


def compile_cases():
    """(kind, label, kernel, in dtypes, out dtypes) for the NVRTC check: every
    kernel with every dtype its registration accepts."""
    from mx_ops.ops.elemwise import _elemwise_cpu
    float_only = _elemwise_cpu.float_only_unary()
    b, f64 = numpy.dtype("bool"), numpy.dtype("float64")
    cases = []
    for name, t in itertools.product(UNARY, CTYPES):
        if name not in float_only or t.startswith("float"):
            t = numpy.dtype(t)
            cases.append(("elementwise", name, _kernel("unary", name), (t, b), (t,)))
    for name, t in itertools.product(BINARY, CTYPES):
        t = numpy.dtype(t)
        cases.append(("elementwise", name, _kernel("binary", name), (t, t, b), (t,)))
        for family in ("scalar", "rscalar"):
            cases.append(("elementwise", name, _kernel(family, name), (t, f64, b), (t,)))
    for name, t in itertools.product(BACKWARD, ("float16", "float32", "float64")):
        t = numpy.dtype(t)
        cases.append(("elementwise", f"backward_{name}", _kernel("backward", name), (t, t, b),
                      (t,)))
    return cases


def compute(family, name):
    """The GPU compute of an op: ``fn(params, inputs, outputs, reqs)`` over
    CuPy arrays, launched on the current stream."""
    table = {"unary": UNARY, "backward": BACKWARD}.get(family, BINARY)
    if name not in table:
        return None

    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        add = reqs[0] == "add"
        kernel = _kernel(family, name)
        if family == "unary":
            kernel(inputs[0], add, outputs[0])
        elif family in _BINARY_FAMILIES:
            kernel(inputs[0], inputs[1], add, outputs[0])
        else:
            kernel(inputs[0], params["scalar"], add, outputs[0])

    return run
