"""The ``mx.sym`` namespace: Symbol, Variable, Group, load/save and one
function per registered operator (``mx.sym.FullyConnected``)."""
from mx_graph import op_functions as _op_functions
from mx_graph.attribute import AttrScope  # noqa: F401
from mx_graph.symbol import (Group, Symbol, Variable, load, load_json, maximum,  # noqa: F401
                             minimum, ones, pow, var, zeros)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return _op_functions.function(name)
    except KeyError:
        raise AttributeError(f"module 'mx.sym' has no attribute '{name}'") from None


def __dir__():
    return sorted(set(globals()) | set(_op_functions.names()))
