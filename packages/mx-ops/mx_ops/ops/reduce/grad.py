"""Gradients of the reductions with MXNet's semantics
(broadcast_reduce_op.h's ReduceAxesBackwardUseNone / UseInOut): every one
repeats the output gradient g over the reduced axes with
_broadcast_reduce_like (the reduced input gives the shape), then

- sum: that; mean: that divided by the number of reduced elements;
- nansum: zero where the input is NaN;
- prod: times out / in (so a zero input gives inf or NaN, as in MXNet);
- nanprod: times out / in, zero where the input is NaN;
- max, min: routed to EVERY element equal to the result (ties each get
  the whole gradient, MXNet's ``eq``);
- norm: ord=2 times in / out, ord=1 times sign(in);
- argmax, argmin: zeros for the input (MXNet's MakeZeroGradNodes).
"""
from mx_ops.core.gradient import apply, set_gradient


def _repeat(node, entry, normalize=False):
    """``entry`` (g or the output) repeated over the reduced axes of the
    node's input."""
    p = node.params
    return apply("_broadcast_reduce_like", entry, node.inputs[0], axis=p["axis"],
                 keepdims=p["keepdims"], exclude=p.get("exclude", False), normalize=normalize)


def _not_nan(x):
    return apply("_equal", x, x)


def _mul(a, b):
    return apply("elemwise_mul", a, b)


def _maker(expr):
    """A maker for y = reduce(x) whose gradient is expr(node, g, x)."""
    def maker(node, ograds):
        x = node.inputs[0]
        return [expr(node, ograds[0], x)]
    return maker


def _sum(node, g, x):
    return _repeat(node, g)


def _mean(node, g, x):
    return _repeat(node, g, normalize=True)


def _nansum(node, g, x):
    return _mul(_repeat(node, g), _not_nan(x))


def _prod(node, g, x):
    return _mul(_repeat(node, g), apply("elemwise_div", _repeat(node, node.outputs()[0]), x))


def _nanprod(node, g, x):
    ratio = apply("elemwise_div", _repeat(node, node.outputs()[0]), x)
    return _mul(_repeat(node, g), apply("where", _not_nan(x), ratio, apply("zeros_like", x)))


def _extreme(node, g, x):
    return _mul(_repeat(node, g), apply("_equal", x, _repeat(node, node.outputs()[0])))


def _norm(node, g, x):
    """With out_dtype, g and the norm are cast back to the input's dtype."""
    y = node.outputs()[0]
    if node.params["out_dtype"] is not None:
        g, y = apply("_backward_Cast", g, x), apply("_backward_Cast", y, x)
    if node.params["ord"] == 1:
        return _mul(_repeat(node, g), apply("sign", x))
    return _mul(_repeat(node, g), apply("elemwise_div", x, _repeat(node, y)))


for _name, _expr in (("sum", _sum), ("mean", _mean), ("nansum", _nansum), ("prod", _prod),
                     ("nanprod", _nanprod), ("max", _extreme), ("min", _extreme),
                     ("norm", _norm)):
    set_gradient(_name, _maker(_expr))


def _zero_maker(node, ograds):
    """MXNet's MakeZeroGradNodes: zeros for every input."""
    return [apply("zeros_like", x) for x in node.inputs]


for _name in ("argmax", "argmin"):
    set_gradient(_name, _zero_maker)
