"""Nodes and entries: the graph vocabulary operators speak (nnvm's Node and
NodeEntry).

A Node is one operator application (or a variable) with parsed parameters
and input entries; a NodeEntry names one output of a node.  Gradient makers
(OpDef.gradient) map a forward node and the gradients of its outputs to
the gradients of its inputs as entries of new nodes, so a gradient can
reuse existing operators.  mx-graph builds Symbols, passes and executors on
these; ``evaluate`` runs a small node graph now, on NumPy arrays, for
tests and reference runs.
"""
import itertools
from typing import NamedTuple

from mx_ops.core import registry

__all__ = ["Node", "NodeEntry", "variable", "make_node", "evaluate", "topological_order"]

_ids = itertools.count()


class NodeEntry(NamedTuple):
    """Output ``index`` of ``node``."""
    node: "Node"
    index: int = 0


class Node:
    """An operator application, or a variable when ``op`` is None.

    ``control_deps`` lists nodes that must run before this one without
    feeding it (nnvm's control dependencies: a backward node that takes
    its forward node's shapes or state, as _backward_Custom).

    ``attrs`` is nnvm's ``attrs.dict``: the string attributes a Symbol
    carries and -symbol.json stores (the call's arguments as given, and
    user attributes such as ``__lr_mult__`` or ``__ctx_group__``).

    ``info`` is nnvm's ``Node::info``: what the autograd tape keeps on a
    node it recorded (mx-ndarray's AGInfo), else None."""
    __slots__ = ("op", "name", "params", "inputs", "control_deps", "attrs", "info", "_id")

    def __init__(self, op, name, params, inputs, attrs=None):
        self.op = op
        self.name = name
        self.params = params
        self.inputs = list(inputs)
        self.control_deps = []
        self.attrs = {} if attrs is None else attrs
        self.info = None
        self._id = next(_ids)

    @property
    def is_variable(self):
        return self.op is None

    @property
    def num_outputs(self):
        return 1 if self.op is None else self.op.output_count(self.params)

    def outputs(self):
        """One entry per output."""
        return [NodeEntry(self, i) for i in range(self.num_outputs)]

    def __repr__(self):
        kind = "variable" if self.op is None else self.op.name
        return f"<Node {self.name} ({kind})>"


def variable(name):
    """A node standing for an input fed at evaluation."""
    return Node(None, name, {}, ())


def make_node(op_name, inputs, name=None, **params):
    """A node applying operator ``op_name`` to entries ``inputs`` (Nodes
    stand for their output 0); parameters are parsed and checked now."""
    op = registry.get(op_name)
    inputs = [e if isinstance(e, NodeEntry) else NodeEntry(e, 0) for e in inputs]
    parsed = op.parse_call(params, len(inputs))
    return Node(op, name or f"{op.name}{next(_ids)}", parsed, inputs)


def topological_order(heads):
    """Nodes reachable from entries ``heads``, every node after its inputs
    and control dependencies; among independent nodes the order of first
    reach from the heads (nnvm's DFSVisit post-order)."""
    order, seen, stack = [], set(), [(e.node, False) for e in reversed(heads)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node._id in seen:
            continue
        seen.add(node._id)
        stack.append((node, True))
        stack.extend((n, False) for n in reversed(node.control_deps) if n._id not in seen)
        stack.extend((e.node, False) for e in reversed(node.inputs) if e.node._id not in seen)
    return order


def evaluate(heads, feed):
    """The values of entries ``heads``, running each node once through
    ``mx_ops.invoke``; ``feed`` maps every variable reached (node or name)
    to its array."""
    from mx_ops.core._invoke import invoke
    values = {}
    for node in topological_order(list(heads)):
        if node.is_variable:
            value = feed.get(node, feed.get(node.name))
            if value is None:
                raise KeyError(f"evaluate: no value fed for variable '{node.name}'")
            values[node._id] = [value]
            continue
        args = [values[e.node._id][e.index] for e in node.inputs]
        out = invoke(node.op.name, args, **node.params)
        values[node._id] = out if isinstance(out, list) else [out]
    return [values[e.node._id][e.index] for e in heads]
