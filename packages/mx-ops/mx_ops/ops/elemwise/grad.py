"""Gradients of the elementwise operators (unary, scalar, same-shape and
broadcasting binary, _grad_add), built from existing operators:
d(exp x) = g * exp x reuses exp's output, d(a - b) = (g, -g), a broadcast op's gradients are summed down to each operand's
shape (_collapse_sum_like), and only gamma and gammaln use dedicated
backward kernels (digamma).  Comparisons and logical ops get zero
gradients, as MXNet's MakeZeroGradNodes gives them."""
import math

from mx_ops.core.gradient import apply, set_gradient


def _out(node):
    return node.outputs()[0]


def _unary(expr):
    """A maker for y = f(x) whose gradient is expr(g, x, y)."""
    def maker(node, ograds):
        return [expr(ograds[0], node.inputs[0], _out(node))]
    return maker


def _mul(a, b):
    return apply("elemwise_mul", a, b)


def _div(a, b):
    return apply("elemwise_div", a, b)


def _scale(a, k):
    return apply("_mul_scalar", a, scalar=k)


def _times_log(y, s):
    """y * log(s): a scale where s > 0; otherwise log(s) comes from the log
    kernel (-inf for 0, NaN below, as MXNet's rpower_grad gives), since a
    parameter cannot hold NaN."""
    if s > 0:
        return _scale(y, math.log(s))
    return _mul(y, apply("log", apply("_plus_scalar", apply("zeros_like", y), scalar=s)))


def _zero(g, x, y):
    return apply("zeros_like", x)


UNARY = {
    "_copy": lambda g, x, y: g,
    "negative": lambda g, x, y: apply("negative", g),
    "abs": lambda g, x, y: _mul(g, apply("sign", x)),
    "square": lambda g, x, y: _mul(g, _scale(x, 2.0)),
    "relu": lambda g, x, y: _mul(g, apply("_greater_scalar", y, scalar=0.0)),
    "exp": lambda g, x, y: _mul(g, y),
    "expm1": lambda g, x, y: _mul(g, apply("_plus_scalar", y, scalar=1.0)),
    "log": lambda g, x, y: _div(g, x),
    "log1p": lambda g, x, y: _div(g, apply("_plus_scalar", x, scalar=1.0)),
    "log2": lambda g, x, y: _div(g, _scale(x, 0.6931471805599453)),
    "log10": lambda g, x, y: _div(g, _scale(x, 2.302585092994046)),
    "sqrt": lambda g, x, y: _div(g, _scale(y, 2.0)),
    "rsqrt": lambda g, x, y: _mul(g, _scale(apply("_power_scalar", y, scalar=3.0), -0.5)),
    "cbrt": lambda g, x, y: _div(g, _scale(apply("square", y), 3.0)),
    "reciprocal": lambda g, x, y: _mul(g, _scale(apply("square", y), -1.0)),
    "sin": lambda g, x, y: _mul(g, apply("cos", x)),
    "cos": lambda g, x, y: _mul(g, apply("negative", apply("sin", x))),
    "tan": lambda g, x, y: _mul(g, apply("_plus_scalar", apply("square", y), scalar=1.0)),
    "sinh": lambda g, x, y: _mul(g, apply("cosh", x)),
    "cosh": lambda g, x, y: _mul(g, apply("sinh", x)),
    "tanh": lambda g, x, y: _mul(g, apply("_rminus_scalar", apply("square", y), scalar=1.0)),
    "sigmoid": lambda g, x, y: _mul(g, _mul(y, apply("_rminus_scalar", y, scalar=1.0))),
    "softsign": lambda g, x, y: _div(g, apply("square", apply("_plus_scalar", apply("abs", x),
                                                              scalar=1.0))),
    "arctan": lambda g, x, y: _div(g, apply("_plus_scalar", apply("square", x), scalar=1.0)),
    "degrees": lambda g, x, y: _scale(g, 57.29577951308232),
    "radians": lambda g, x, y: _scale(g, 0.017453292519943295),
    "arcsin": lambda g, x, y: _div(g, apply("sqrt", apply("_rminus_scalar", apply("square", x),
                                                          scalar=1.0))),
    "arccos": lambda g, x, y: apply("negative", _div(g, apply("sqrt", apply(
        "_rminus_scalar", apply("square", x), scalar=1.0)))),
    "arcsinh": lambda g, x, y: _div(g, apply("sqrt", apply("_plus_scalar", apply("square", x),
                                                           scalar=1.0))),
    "arccosh": lambda g, x, y: _div(g, apply("sqrt", apply("_minus_scalar", apply("square", x),
                                                           scalar=1.0))),
    "arctanh": lambda g, x, y: _div(g, apply("_rminus_scalar", apply("square", x), scalar=1.0)),
    # d erf = 2 / sqrt(pi) * exp(-x^2)
    "erf": lambda g, x, y: _mul(g, _scale(apply("exp", apply("negative", apply("square", x))),
                                          1.1283791670955126)),
    # d erfinv = sqrt(pi) / 2 * exp(erfinv(x)^2)
    "erfinv": lambda g, x, y: _mul(g, _scale(apply("exp", apply("square", y)),
                                             0.886226925452758)),
    # y = x^(-1/3): dy/dx = -y / (3x)
    "rcbrt": lambda g, x, y: _mul(g, _scale(_div(y, x), -1.0 / 3.0)),
    # MXNet's dedicated backward ops: they need digamma.
    "gamma": lambda g, x, y: apply("_backward_gamma", g, x),
    "gammaln": lambda g, x, y: apply("_backward_gammaln", g, x),
}
# Piecewise-constant functions: gradient 0 (MXNet's zero gradients).
for _name in ("sign", "round", "rint", "floor", "ceil", "trunc", "fix", "logical_not"):
    UNARY[_name] = _zero

# y = x op s (or s op x): gradient g * d/dx.
SCALAR = {
    "_plus_scalar": lambda g, x, y, s: g,
    "_minus_scalar": lambda g, x, y, s: g,
    "_rminus_scalar": lambda g, x, y, s: apply("negative", g),
    "_mul_scalar": lambda g, x, y, s: _scale(g, s),
    "_div_scalar": lambda g, x, y, s: _scale(g, 1.0 / s),
    "_rdiv_scalar": lambda g, x, y, s: _mul(g, apply("negative", _div(y, x))),
    "_power_scalar": lambda g, x, y, s: _mul(g, _scale(apply("_power_scalar", x,
                                                             scalar=s - 1.0), s)),
    # s^x: y * log(s)
    "_rpower_scalar": lambda g, x, y, s: _mul(g, _times_log(y, s)),
    "_mod_scalar": lambda g, x, y, s: g,
    # s mod x = s - x * floor(s / x): -floor(s / x)
    "_rmod_scalar": lambda g, x, y, s: _mul(g, apply("negative", apply(
        "floor", apply("_rdiv_scalar", x, scalar=s)))),
    # MXNet's ge / le: a tie sends the gradient to x
    "_maximum_scalar": lambda g, x, y, s: _mul(g, apply("_greater_equal_scalar", x, scalar=s)),
    "_minimum_scalar": lambda g, x, y, s: _mul(g, apply("_lesser_equal_scalar", x, scalar=s)),
    "_hypot_scalar": lambda g, x, y, s: _mul(g, _div(x, y)),
}
# Comparisons and logical ops: MXNet's MakeZeroGradNodes.
for _name in ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
              "logical_and", "logical_or", "logical_xor"):
    SCALAR[f"_{_name}_scalar"] = lambda g, x, y, s: apply("zeros_like", x)


class _Family:
    """The binary ops of one family: same shapes (elemwise_*, _power, ...)
    or NumPy broadcasting (broadcast_*).  A broadcast family sums each
    gradient down to its operand's shape."""

    def __init__(self, names, broadcast):
        self.names = names
        self.broadcast = broadcast

    def __getattr__(self, kernel):
        return lambda a, b: apply(self.names[kernel], a, b)

    def collapse(self, grad, operand):
        return apply("_collapse_sum_like", grad, operand) if self.broadcast else grad


# Binary ops: (lhs gradient, rhs gradient) from g, a, b, the output y and
# the op family k (k.mul is elemwise_mul or broadcast_mul), before any sum
# down to the operands' shapes.
BINARY_EXPR = {
    "add": lambda g, a, b, y, k: (g, g),
    "sub": lambda g, a, b, y, k: (g, apply("negative", g)),
    "mul": lambda g, a, b, y, k: (k.mul(g, b), k.mul(g, a)),
    "div": lambda g, a, b, y, k: (k.div(g, b), apply("negative", k.div(k.mul(g, a),
                                                                         apply("square", b)))),
    # a mod b = a - b * floor(a / b)
    "mod": lambda g, a, b, y, k: (g, apply("negative", k.mul(g, apply("floor", k.div(a, b))))),
    "power": lambda g, a, b, y, k: (
        k.mul(g, k.mul(b, k.power(a, apply("_minus_scalar", b, scalar=1.0)))),
        k.mul(g, k.mul(y, apply("log", a)))),
    # MXNet: the lhs takes the gradient on ties (ge / lt, le / gt)
    "maximum": lambda g, a, b, y, k: (k.mul(g, k.greater_equal(a, b)), k.mul(g, k.lesser(a, b))),
    "minimum": lambda g, a, b, y, k: (k.mul(g, k.lesser_equal(a, b)), k.mul(g, k.greater(a, b))),
    "hypot": lambda g, a, b, y, k: (k.mul(g, k.div(a, y)), k.mul(g, k.div(b, y))),
}
for _name in ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
              "logical_and", "logical_or", "logical_xor"):
    BINARY_EXPR[_name] = lambda g, a, b, y, k: (apply("zeros_like", a), apply("zeros_like", b))

_KERNELS = ("add", "sub", "mul", "div", "mod", "power", "maximum", "minimum", "hypot", "equal",
            "not_equal", "greater", "greater_equal", "lesser", "lesser_equal", "logical_and",
            "logical_or", "logical_xor")
_ELEMWISE_NAMES = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
                   "div": "elemwise_div", **{k: f"_{k}" for k in _KERNELS[4:]}}
ELEMWISE = _Family(_ELEMWISE_NAMES, broadcast=False)
BROADCAST = _Family({k: f"broadcast_{k}" for k in _KERNELS}, broadcast=True)
# registered name -> (kernel, family)
BINARY = {**{n: (k, ELEMWISE) for k, n in _ELEMWISE_NAMES.items()},
          **{f"broadcast_{k}": (k, BROADCAST) for k in _KERNELS}}


def _scalar_maker(expr):
    def maker(node, ograds):
        return [expr(ograds[0], node.inputs[0], _out(node), node.params["scalar"])]
    return maker


def _binary_maker(kernel, family):
    expr = BINARY_EXPR[kernel]

    def maker(node, ograds):
        a, b = node.inputs
        ga, gb = expr(ograds[0], a, b, _out(node), family)
        return [family.collapse(ga, a), family.collapse(gb, b)]
    return maker


for _name, _expr in UNARY.items():
    set_gradient(_name, _unary(_expr))
for _name, _expr in SCALAR.items():
    set_gradient(_name, _scalar_maker(_expr))
for _name, (_kernel, _family) in BINARY.items():
    set_gradient(_name, _binary_maker(_kernel, _family))
# MXNet registers no gradient for _grad_add; elemwise_add's (g, g) is the
# correct one and lets a gradient graph be differentiated again.
set_gradient("_grad_add", _binary_maker("add", ELEMWISE))
