"""The graph IR: nnvm's Graph and IndexedGraph.

A Graph is its output entries plus named attributes that passes attach
("shape", "dtype", "storage_id", ...); nodes are mx_ops.core.node.Node, shared
with Symbols and gradient makers.  Passes are functions Graph -> Graph that
read and add attributes and never execute anything.

The IndexedGraph numbers the nodes in topological order (inputs and
control dependencies first) and every output entry of every node densely:
entry id = ``node_row_ptr[node id] + output index``, so per-entry
attributes are plain lists.
"""
from mx_ops.core.node import NodeEntry, topological_order

__all__ = ["Graph", "IndexedGraph", "topological_order"]


class IndexedGraph:
    """Dense ids over a graph's nodes and entries.

    Attributes
    ----------
    nodes : list of Node
        Topological order; a node's id is its position.
    node_row_ptr : list of int
        ``node_row_ptr[i]`` is the id of node i's first entry; one more item
        at the end holds the number of entries.
    input_nodes : list of int
        The variable nodes, in order.
    mutable_input_nodes : set of int
        Variables some operator writes in place (auxiliary states).
    outputs : list of int
        Entry ids of the graph's outputs.
    """

    def __init__(self, outputs):
        self.nodes = topological_order(outputs)
        self._nid = {n._id: i for i, n in enumerate(self.nodes)}
        self.node_row_ptr = [0]
        for n in self.nodes:
            self.node_row_ptr.append(self.node_row_ptr[-1] + n.num_outputs)
        self.input_nodes = [i for i, n in enumerate(self.nodes) if n.is_variable]
        self.mutable_input_nodes = set()
        self.inputs = []       # per node: entry ids it reads
        for n in self.nodes:
            self.inputs.append([self.entry_id(e) for e in n.inputs])
            if not n.is_variable:
                for k in n.op.mutated_inputs(n.params):
                    src = n.inputs[k].node
                    if src.is_variable:
                        self.mutable_input_nodes.add(self._nid[src._id])
        self.outputs = [self.entry_id(e) for e in outputs]

    @property
    def num_nodes(self):
        return len(self.nodes)

    @property
    def num_entries(self):
        return self.node_row_ptr[-1]

    def node_id(self, node):
        """The id of ``node``."""
        return self._nid[node._id]

    def entry_id(self, entry, index=None):
        """The id of NodeEntry ``entry`` (or of output ``index`` of node id
        ``entry``)."""
        if index is not None:
            return self.node_row_ptr[entry] + index
        return self.node_row_ptr[self._nid[entry.node._id]] + entry.index

    def entry(self, eid):
        """The NodeEntry with id ``eid``."""
        lo, hi = 0, len(self.nodes)
        while hi - lo > 1:          # the node whose row holds eid
            mid = (lo + hi) // 2
            if self.node_row_ptr[mid] <= eid:
                lo = mid
            else:
                hi = mid
        return NodeEntry(self.nodes[lo], eid - self.node_row_ptr[lo])

    def entry_refcounts(self):
        """How many times each entry is read (by nodes, or as an output)."""
        counts = [0] * self.num_entries
        for row in self.inputs:
            for eid in row:
                counts[eid] += 1
        for eid in self.outputs:
            counts[eid] += 1
        return counts


class Graph:
    """Output entries and the attributes passes attached to them."""

    def __init__(self, outputs, attrs=None):
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self._indexed = None

    @property
    def indexed(self):
        """The IndexedGraph (built once; a pass that changes the nodes
        returns a new Graph)."""
        if self._indexed is None:
            self._indexed = IndexedGraph(self.outputs)
        return self._indexed

    def with_attrs(self, **attrs):
        """The same nodes with ``attrs`` added (passes return this)."""
        g = Graph(self.outputs, dict(self.attrs, **attrs))
        g._indexed = self._indexed
        return g
