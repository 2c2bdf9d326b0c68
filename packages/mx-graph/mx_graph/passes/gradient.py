"""Gradient: nnvm's pass that appends the backward graph.

Walking the forward nodes in reverse topological order, each node's
registered gradient maker turns the gradients of its outputs into
gradients of its inputs (entries of new nodes).  Several contributions to
one entry are summed with one ``add_n`` node; an output that receives no
gradient gets ``zeros_like`` when its node's maker needs it.  Only nodes
on a path from the requested inputs to the outputs are differentiated.
"""
from mx_ops import registry
from mx_ops.core import gradient as _gradient
from mx_ops.core.node import NodeEntry, make_node

from mx_graph.graph import Graph, topological_order

__all__ = ["gradient", "sum_entries"]


def sum_entries(entries, name):
    """One entry holding the sum of ``entries`` (the entry itself for one)."""
    if len(entries) == 1:
        return entries[0]
    try:
        registry.get("add_n")
    except registry.OperatorNotFound:   # a pairwise chain where add_n is missing
        total = entries[0]
        for i, e in enumerate(entries[1:]):
            total = NodeEntry(make_node("elemwise_add", [total, e], name=f"{name}_sum{i}"), 0)
        return total
    return NodeEntry(make_node("add_n", entries, name=f"{name}_sum"), 0)


def gradient(graph, xs, ys_grads, forward_of=None):
    """The gradients of ``graph``'s outputs (ys) with respect to entries
    ``xs``, with ``ys_grads`` (one entry per y, or None for a y whose
    gradient is not fed) as the head gradients.

    Returns ``(grads, num_forward_nodes)``: one entry per x, or None where no
    path leads from x to a y that receives a gradient.  A dict
    ``forward_of`` is filled with {id of each node created here: the
    forward Node it belongs to}."""
    ys = graph.outputs
    forward = topological_order(ys)
    claim = _claimer(forward, ys_grads, forward_of)
    # Nodes that depend on some x: the only ones worth differentiating.
    on_path = set()
    x_nodes = {e.node._id for e in xs}
    for node in forward:
        if node._id in x_nodes or any(e.node._id in on_path for e in node.inputs):
            on_path.add(node._id)
    pending = {}      # (node id, output index) -> list of gradient entries
    for y, g in zip(ys, ys_grads):
        if g is not None:
            pending.setdefault((y.node._id, y.index), []).append(g)
    for node in reversed(forward):
        if node.is_variable or node._id not in on_path:
            continue
        got = [pending.pop((node._id, i), None) for i in range(node.num_outputs)]
        if all(g is None for g in got):
            continue
        out_grads = []
        for i, g in enumerate(got):
            if g is None:
                out_grads.append(NodeEntry(make_node(
                    "zeros_like", [NodeEntry(node, i)], name=f"{node.name}_zero_grad{i}"), 0))
            else:
                out_grads.append(sum_entries(g, f"{node.name}_out{i}_grad"))
        in_grads = _gradient.grad_entries(node, out_grads)
        claim(out_grads + list(in_grads), node)
        for e, g in zip(node.inputs, in_grads):
            if g is None or e.node._id not in on_path:
                continue
            pending.setdefault((e.node._id, e.index), []).append(g)
    grads = []
    for x in xs:
        g = pending.get((x.node._id, x.index))
        grads.append(None if g is None else sum_entries(g, f"{x.node.name}_grad"))
        claim(grads[-1:], x.node)
    return grads, len(forward)


def _claimer(forward, ys_grads, forward_of):
    """``claim(entries, owner)``: records ``owner`` for the nodes behind
    ``entries`` that no one owns yet, walking up to the forward graph, the
    head gradients and the nodes already claimed."""
    if forward_of is None:
        return lambda entries, owner: None
    stop = {n._id for n in forward}
    stop.update(e.node._id for e in ys_grads if e is not None)

    def claim(entries, owner):
        stack = [e.node for e in entries if e is not None]
        while stack:
            n = stack.pop()
            if n.is_variable or n._id in stop or n._id in forward_of:
                continue
            forward_of[n._id] = owner
            stack.extend(e.node for e in n.inputs)
            stack.extend(n.control_deps)
    return claim


def gradient_graph(graph, xs, ys_grads):
    """A Graph whose outputs are ``graph``'s outputs then one gradient per
    x (None entries dropped), and the gradients as returned by gradient.
    The graph's "forward_node" attribute maps the id of each node the pass
    created to its forward Node (see ``gradient``)."""
    forward_of = dict(graph.attrs.get("forward_node", {}))
    grads, nforward = gradient(graph, xs, ys_grads, forward_of)
    outputs = list(graph.outputs) + [g for g in grads if g is not None]
    return Graph(outputs, dict(graph.attrs, num_forward_nodes=nforward,
                               forward_node=forward_of)), grads
