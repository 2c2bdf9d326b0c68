"""mx-graph: Symbol, graph passes, the executor, JSON, viz.

Depends on: ndarray, ops.  Empty until its issue lands: nothing here pretends
to work yet.
"""
__version__ = "0.1.0"
