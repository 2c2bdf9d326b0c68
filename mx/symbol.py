"""``mx.sym`` / ``mx.symbol``: symbols and one function per operator."""
from mx_graph.sym import *  # noqa: F401,F403
from mx_graph.sym import __all__, __dir__, __getattr__, _internal, op  # noqa: F401
from mx_graph.sym import (AttrScope, Group, Symbol, Variable, load, load_json,  # noqa: F401
                          maximum, minimum, ones, pow, var, zeros)
