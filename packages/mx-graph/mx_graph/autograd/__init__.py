"""mx-graph's part of autograd: the backward programs mx-ndarray's tape
replays (built with the Gradient pass and the registered gradient makers)
and ``get_symbol`` (a recorded graph as a Symbol).  Importing it registers
the program builder with mx-ndarray."""
from mx_ndarray import _autograd

from mx_graph.autograd.program import build_program
from mx_graph.autograd.symbol import get_symbol

_autograd.set_program_builder(build_program)

__all__ = ["build_program", "get_symbol"]
