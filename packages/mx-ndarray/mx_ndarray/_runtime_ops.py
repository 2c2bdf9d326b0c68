"""``mx.nd.<name>`` for operators registered at run time (a user's
OperatorProperty or SimpleOp registration, a custom-operator library),
which the generated op.py and _internal.py cannot know: their module
``__getattr__`` falls back to the registry and builds the function on
first use, with the generated functions' calling convention (inputs
positionally or by name, then parameters) and the registry's docstring.
mx-graph's ``mx.sym`` fallback (mx_graph/_runtime_ops.py) is built from
``fallback`` and ``bind_call`` too, and the generated functions of both
take ``NULL`` as their parameters' default."""
from mx_ops import registry
from mx_ndarray._ndarray import invoke

__all__ = ["public_getattr", "internal_getattr", "fallback", "bind_call", "NULL"]


class _Null:
    """The default of a generated function's parameters: not given, the
    registry's default applies (MXNet's ``_Null``, named so in help())."""
    __slots__ = ()

    def __repr__(self):
        return "_Null"


NULL = _Null()


def fallback(module, internal, make):
    """A module ``__getattr__`` for operators registered at run time:
    names starting with '_' when ``internal``, the others when not (as the
    generated op.py and _internal.py split them).  ``make(op, name,
    module)`` builds a name's function once, and again when the name is
    registered anew."""
    cache = {}    # name -> (OpDef, function)

    def module_getattr(name):
        if name.startswith("__") or name.startswith("_") != internal:
            raise AttributeError(f"module '{module}' has no attribute '{name}'")
        try:
            op = registry.get(name)
        except registry.OperatorNotFound:
            raise AttributeError(f"module '{module}' has no attribute '{name}'") from None
        hit = cache.get(name)
        if hit is None or hit[0] is not op:
            hit = cache[name] = (op, make(op, name, module))
        return hit[1]

    return module_getattr


def bind_call(op, args, kwargs):
    """``(inputs, kwargs)`` of a call ``fn(*args, **kwargs)`` under the
    generated functions' signature (``OpDef.call_signature``): the inputs
    in order, None where left out (all positional arguments when the
    operator takes its inputs positionally); positional values past the
    inputs fill the parameters in order; ``kwargs`` keeps the rest."""
    arg_names, param_names = op.call_signature()
    if arg_names is None:
        return list(args), kwargs
    extra = args[len(arg_names):]
    if len(extra) > len(param_names):
        raise TypeError(f"{op.name}() takes at most {len(arg_names) + len(param_names)} "
                        f"positional arguments ({len(args)} given)")
    for key, value in zip(param_names, extra):
        if key in kwargs:
            raise TypeError(f"{op.name}() got multiple values for argument '{key}'")
        kwargs[key] = value
    inputs = list(args[:len(arg_names)]) + [None] * max(0, len(arg_names) - len(args))
    for i, key in enumerate(arg_names):
        if key in kwargs:
            if i < len(args):
                raise TypeError(f"{op.name}() got multiple values for argument '{key}'")
            inputs[i] = kwargs.pop(key)
    return inputs, kwargs


def _make(op, fname, module):
    """The NDArray function of ``op`` under the name ``fname``."""
    def fn(*args, out=None, name=None, **kwargs):
        inputs, kwargs = bind_call(op, args, kwargs)
        if op.optional_inputs:
            # Inputs that parameters remove (FullyConnected's bias with
            # no_bias=True) are left out, as the generated functions do.
            inputs = [a for a in inputs if a is not None]
        return invoke(op.name, inputs, out=out, **kwargs)

    fn.__name__ = fn.__qualname__ = fname
    fn.__module__ = module
    fn.__doc__ = op.docstring()
    return fn


public_getattr = fallback("mx.nd", False, _make)
internal_getattr = fallback("mx.nd._internal", True, _make)
