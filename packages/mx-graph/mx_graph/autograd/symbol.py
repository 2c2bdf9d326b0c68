"""``get_symbol``: a recorded graph as a Symbol (MXNet's
MXAutogradGetSymbol): copies of the tape's nodes, named as MXNet names
them (marked variables ``var<i>``, constant inputs ``null<i>``, one
count over both; operators ``node_<i>``), with their
parameters as string attributes."""
from mx_ops.core.node import Node, NodeEntry, topological_order

from mx_graph.symbol import Symbol, attr_string

__all__ = ["get_symbol"]


def get_symbol(x):
    """The graph that computed NDArray ``x`` (recorded under
    ``autograd.record()``), as a Symbol whose arguments are the graph's
    inputs."""
    node = x._ag_node
    if node is None:
        raise ValueError("get_symbol: the array was not computed under autograd.record() "
                         "from an array with attach_grad, so no graph was recorded")
    copies = {}
    nvar = nop = 0
    for n in topological_order([NodeEntry(node, x._ag_index)]):
        if n.is_variable:
            marked = n.info is not None and n.info.grad_req is not None
            copies[n._id] = Node(None, f"{'var' if marked else 'null'}{nvar}", {}, ())
            nvar += 1
            continue
        attrs = {k: attr_string(v) for k, v in n.params.items()
                 if not k.startswith("_") and v is not None}
        copies[n._id] = Node(n.op, f"node_{nop}", n.params,
                             [NodeEntry(copies[e.node._id], e.index) for e in n.inputs], attrs)
        nop += 1
    return Symbol([NodeEntry(copies[node._id], x._ag_index)])
