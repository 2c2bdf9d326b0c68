"""mx-graph: Symbol, graph passes, the executor, JSON, viz (nnvm's role).

Symbols build a graph of mx_ops nodes; passes (mx_graph.passes) map a
Graph to a Graph adding attributes (shape, dtype, gradient, memory plan,
device placement) and never execute; the Executor binds a graph to arrays
and pushes each node's kernel to the engine.
"""
from mx_graph.attribute import AttrScope
from mx_graph.graph import Graph, IndexedGraph
from mx_graph.name import NameManager, Prefix
from mx_graph.symbol import Group, Symbol, Variable, load, load_json, var
from mx_graph import autograd  # noqa: F401  (registers the autograd backward with mx-ndarray)

__version__ = "0.1.0"

__all__ = ["AttrScope", "Graph", "IndexedGraph", "NameManager", "Prefix", "Group", "Symbol",
           "Variable", "load", "load_json", "var"]
