"""``mx.symbol`` (also ``mx.sym``): symbols and one function per operator."""
from mx_graph.sym import *  # noqa: F401,F403
from mx_graph.sym import __all__ as _base_all
from mx_graph.sym import __dir__ as _graph_dir
from mx_graph.sym import __getattr__, _internal  # noqa: F401
from mx_graph.sym import (AttrScope, Group, Symbol, Variable, hypot, load,  # noqa: F401
                          load_json, maximum, minimum, ones, pow, power, var, zeros)

# The sub-modules of MXNet's mx.sym.  The star import bound mx_graph's own
# ``op``, which would stop mx.symbol.op from loading.
del op  # noqa: F821
from mx.symbol import contrib, linalg, op, random  # noqa: E402

__all__ = _base_all + ["contrib", "linalg", "random"]


def __dir__():
    return sorted(set(globals()) | set(_graph_dir()))
