"""The ``mx.sym`` namespace: Symbol, Variable, Group, load/save and one
function per registered operator (``mx.sym.FullyConnected``), generated
into mx_graph/op.py (``mx.sym.op``) and mx_graph/_internal.py
(``mx.sym._internal``, the names starting with '_')."""
from mx_graph import _internal, op  # noqa: F401
from mx_graph import op_functions as _op_functions
from mx_graph._runtime_ops import public_getattr as _public_getattr
from mx_graph.attribute import AttrScope  # noqa: F401
from mx_graph.op import *  # noqa: F401,F403
from mx_graph.creation import (arange, eye, full, histogram, linspace, ones,  # noqa: F401,E402
                               split_v2, zeros)
from mx_graph.symbol import (Group, Symbol, Variable, hypot, load, load_json,  # noqa: F401
                             maximum, minimum, pow, power, var)

# Listed so that help(mx.sym) shows the operator functions too.
__all__ = op.__all__ + ["op", "AttrScope", "Group", "Symbol", "Variable", "load", "load_json",
                        "maximum", "minimum", "hypot", "ones", "pow", "power", "var", "zeros",
                        "full", "arange", "split_v2", "eye", "linspace", "histogram"]


def __getattr__(name):
    # '_'-names live in mx.sym._internal (as in MXNet); mx.sym._plus has
    # always worked here too.  Public names registered at run time resolve
    # through the registry.
    if name.startswith("_") and not name.startswith("__"):
        try:
            return getattr(_internal, name)
        except AttributeError:
            raise AttributeError(f"module 'mx.sym' has no attribute '{name}'") from None
    return _public_getattr(name)


def __dir__():
    return sorted(set(globals()) | set(_op_functions.names()))
