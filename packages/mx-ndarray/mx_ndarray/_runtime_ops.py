"""``mx.nd.<name>`` for operators registered at run time (custom-operator
libraries loaded with mx.library.load), which the generated op.py and
_internal.py cannot know: their module ``__getattr__`` falls back to the
registry and builds the function on first use."""
from mx_ops import registry
from mx_ndarray._ndarray import invoke

__all__ = ["public_getattr", "internal_getattr"]

_cache = {}    # name -> (OpDef, function)


def _function(name, module):
    try:
        op = registry.get(name)
    except registry.OperatorNotFound:
        raise AttributeError(f"module '{module}' has no attribute '{name}'") from None
    hit = _cache.get(name)
    if hit is not None and hit[0] is op:
        return hit[1]

    def fn(*data, out=None, name=None, **kwargs):
        return invoke(op.name, list(data), out=out, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = op.docstring()
    _cache[name] = (op, fn)
    return fn


def public_getattr(name):
    """mx.nd's fallback: operators whose names do not start with '_'."""
    if name.startswith("_"):
        raise AttributeError(f"module 'mx.nd' has no attribute '{name}'")
    return _function(name, "mx.nd")


def internal_getattr(name):
    """mx.nd._internal's fallback: operators whose names start with '_'."""
    if not name.startswith("_") or name.startswith("__"):
        raise AttributeError(f"module 'mx.nd._internal' has no attribute '{name}'")
    return _function(name, "mx.nd._internal")
