"""Gradients of the elementwise operators, transpose and dot, built from
existing operators (no dedicated backward kernels): d(exp x) = g * exp x
reuses exp's output, d(a - b) = (g, -g), and so on."""
from mx_ops.gradient import apply, set_gradient


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
}
# Piecewise-constant functions: gradient 0 (MXNet's zero gradients).
for _name in ("sign", "round", "rint", "floor", "ceil", "trunc", "fix"):
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
}

# Same-shape binary ops: (lhs gradient, rhs gradient).
BINARY = {
    "elemwise_add": lambda g, a, b: (g, g),
    "elemwise_sub": lambda g, a, b: (g, apply("negative", g)),
    "elemwise_mul": lambda g, a, b: (_mul(g, b), _mul(g, a)),
    "elemwise_div": lambda g, a, b: (_div(g, b),
                                     apply("negative", _div(_mul(g, a), apply("square", b)))),
}


def _scalar_maker(expr):
    def maker(node, ograds):
        return [expr(ograds[0], node.inputs[0], _out(node), node.params["scalar"])]
    return maker


def _binary_maker(expr):
    def maker(node, ograds):
        return list(expr(ograds[0], node.inputs[0], node.inputs[1]))
    return maker


def _transpose_maker(node, ograds):
    axes = node.params["axes"]
    if not axes:                    # reversed axes are their own inverse
        return [apply("transpose", ograds[0])]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a % len(axes)] = i
    return [apply("transpose", ograds[0], axes=tuple(inverse))]


def _dot_maker(node, ograds):
    """C = op(A) op(B) for matrices: dA and dB as dots of g with the other
    operand, the transposes chosen so no explicit transpose is needed."""
    g, (a, b) = ograds[0], node.inputs
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    grad_a = (apply("dot", b, g, transpose_a=tb, transpose_b=True) if ta
              else apply("dot", g, b, transpose_b=not tb))
    grad_b = (apply("dot", g, a, transpose_a=True, transpose_b=ta) if tb
              else apply("dot", a, g, transpose_a=not ta))
    return [grad_a, grad_b]


for _name, _expr in UNARY.items():
    set_gradient(_name, _unary(_expr))
for _name, _expr in SCALAR.items():
    set_gradient(_name, _scalar_maker(_expr))
for _name, _expr in BINARY.items():
    set_gradient(_name, _binary_maker(_expr))
set_gradient("transpose", _transpose_maker)
set_gradient("dot", _dot_maker)
