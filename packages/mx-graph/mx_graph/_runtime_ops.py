"""``mx.sym.<name>`` for operators registered at run time (a user's
OperatorProperty or SimpleOp registration, a custom-operator library,
mx.operator.register), which the generated op.py and _internal.py cannot
know: their module ``__getattr__`` builds the function on first use, with
the generated functions' calling convention (mx-ndarray's ``bind_call``)
and the registry's docstring.  mx.nd's counterpart is
mx_ndarray/_runtime_ops.py."""
from mx_ndarray._runtime_ops import bind_call, fallback

from mx_graph.op_functions import compose

__all__ = ["public_getattr", "internal_getattr"]


def _make(op, fname, module):
    """The Symbol function of ``op`` under the name ``fname``."""
    def fn(*args, name=None, attr=None, **kwargs):
        inputs, kwargs = bind_call(op, args, kwargs)
        return compose(fname, inputs, name, attr, kwargs)

    fn.__name__ = fn.__qualname__ = fname
    fn.__module__ = module
    fn.__doc__ = op.docstring("symbol")
    return fn


public_getattr = fallback("mx.sym", False, _make)
internal_getattr = fallback("mx.sym._internal", True, _make)
