"""NDArray's fluent methods: MXNet's ``x.sum(axis=1)`` is ``mx.nd.sum(x, axis=1)``.

Each method is the generated mx.nd function itself, set on the class, so
``x.sum()`` binds ``x`` as the function's first argument and costs what
``mx.nd.sum(x)`` costs: the same call path (``call_op`` -> ``_call``, where
autograd records), no wrapper in between.  NDArray is a cdef type that op.py
imports, so the functions are set once op is loaded (``_set_methods``)
rather than in the class body.

The methods whose behaviour differs from their function's (``flatten``,
``expand_dims``, ``squeeze`` with ``inplace``, ``broadcast_to``,
``broadcast_like``, ``diag``, ``reshape``, ``T``) are written in
_ndarray.pyx.  A name whose operator is not registered yet gets no method
(tests/data/mx_missing_names.json lists it under mx.nd.NDArray).
"""
from mx_ndarray import op as _op
from mx_ndarray._ndarray import _set_methods

__all__ = ["FLUENT"]

# MXNet 1.9.1's NDArray methods that are ``op.<name>(self, *args, **kwargs)``
# (python/mxnet/ndarray/ndarray.py), in its order.
FLUENT = (
    "reshape_like", "zeros_like", "ones_like", "broadcast_axes", "repeat", "pad", "swapaxes",
    "split", "slice", "slice_axis", "slice_like", "take", "one_hot", "pick", "sort", "topk",
    "argsort", "argmax", "argmax_channel", "argmin", "clip", "abs", "sign", "shape_array",
    "size_array", "tile", "transpose", "flip", "depth_to_space", "space_to_depth", "sum",
    "nansum", "prod", "nanprod", "mean", "max", "min", "norm", "round", "rint", "fix", "floor",
    "ceil", "trunc", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "degrees", "radians",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "exp", "expm1", "log", "log10",
    "log2", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt", "square", "reciprocal", "relu",
    "sigmoid", "softmax", "log_softmax", "softmin",
)


def _present():
    """The fluent names whose generated function exists (read from the
    module's dict: op's ``__getattr__`` would build run-time functions)."""
    functions = vars(_op)
    return {name: functions[name] for name in FLUENT if name in functions}


_set_methods(_present())
