"""``mx.nd.<name>`` for operators registered at run time (a user's
OperatorProperty or SimpleOp registration, a custom-operator library),
which the generated op.py and _internal.py cannot know: their module
``__getattr__`` falls back to the registry and builds the function on
first use, with the generated functions' calling convention (inputs
positionally or by name, then parameters) and the registry's docstring."""
from mx_ops import registry
from mx_ndarray._ndarray import invoke

__all__ = ["public_getattr", "internal_getattr", "make_function"]

_cache = {}    # name -> (OpDef, function)


def make_function(name, module="mx.nd"):
    """The NDArray function of operator ``name`` (AttributeError if there
    is none), rebuilt when the name is registered anew."""
    try:
        op = registry.get(name)
    except registry.OperatorNotFound:
        raise AttributeError(f"module '{module}' has no attribute '{name}'") from None
    hit = _cache.get(name)
    if hit is not None and hit[0] is op:
        return hit[1]
    # Positional arguments are all inputs when their number is not fixed
    # by declared names: a variadic operator, or a library operator whose
    # parseAttrs decides it.
    positional = op.variadic or not op.arguments
    arg_names = [] if positional else list(op.arguments)
    param_names = [p for p in op.params if p != op.key_var_num_args]

    def fn(*args, out=None, name=None, **kwargs):
        if positional:
            inputs = list(args)
        else:
            inputs = list(args[:len(arg_names)])
            extra = args[len(arg_names):]
            if len(extra) > len(param_names):
                raise TypeError(f"{op.name}() takes at most {len(arg_names) + len(param_names)} "
                                f"positional arguments ({len(args)} given)")
            for key, value in zip(param_names, extra):
                if key in kwargs:
                    raise TypeError(f"{op.name}() got multiple values for argument '{key}'")
                kwargs[key] = value
            inputs += [None] * (len(arg_names) - len(inputs))
            for i, key in enumerate(arg_names):
                if key in kwargs:
                    if i < len(args):
                        raise TypeError(f"{op.name}() got multiple values for argument "
                                        f"'{key}'")
                    inputs[i] = kwargs.pop(key)
            if op.optional_inputs:
                inputs = [a for a in inputs if a is not None]
        return invoke(op.name, inputs, out=out, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = op.docstring()
    _cache[name] = (op, fn)
    return fn


def public_getattr(name):
    """mx.nd's fallback: operators whose names do not start with '_'."""
    if name.startswith("_"):
        raise AttributeError(f"module 'mx.nd' has no attribute '{name}'")
    return make_function(name, "mx.nd")


def internal_getattr(name):
    """mx.nd._internal's fallback: operators whose names start with '_'."""
    if not name.startswith("_") or name.startswith("__"):
        raise AttributeError(f"module 'mx.nd._internal' has no attribute '{name}'")
    return make_function(name, "mx.nd._internal")

