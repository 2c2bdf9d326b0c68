"""``mx.symbol.op``: one Symbol function per registered operator."""
from mx_graph.op import *  # noqa: F401,F403
from mx_graph.op import __all__, __getattr__  # noqa: F401  (and those registered at run time)
