"""PlaceDevice: nnvm's pass that puts every node on a device (group2ctx
model parallelism) and a copy on every edge between two devices.

Placement, as nnvm's PlaceDevice:
- a node with a ``__ctx_group__`` attribute (``AttrScope(ctx_group=...)``)
  goes to ``group2ctx[group]``;
- a backward node (one the Gradient pass made, found in the graph's
  "forward_node" attribute) goes where its forward node is;
- any other node takes the device of its first placed input (forward
  propagation), else of a placed consumer (backward propagation: a
  variable lands where it is read);
- what is still unplaced (no group anywhere upstream or downstream) goes
  to ``default_ctx``.
nnvm sweeps forward and backward once; a backward node whose forward
node is only placed by the backward sweep (a variable-fed layer without a
group, say) would then stay on the default device, so the sweeps repeat
until nothing changes.

Every edge whose ends are on two devices gets a ``_CrossDeviceCopy`` node
on the reader's device, one per (entry, device) however many nodes read
it there, named ``<source>_<output index>_copy`` as nnvm names them.  A
node whose inputs change is replaced by a new node (copy on write: the
nodes are shared with Symbols and must not change).  A mutable input (an
auxiliary state an operator writes in place) cannot be copied, so one on
another device than its writer is an error.

Attributes of the result: "device" (an int per node, an index into
``[default_ctx] + the distinct contexts of group2ctx``; PlanMemory keeps
storage sharing within one device) and "device_ctx" (the Context per
node, where the executor allocates).  When copies are inserted the nodes
and entries are renumbered: the per-entry "shape" and "dtype" and the
"forward_node" map are carried over (a copy has its source's shape and
dtype), as are attributes that are not containers; other per-node or
per-entry attributes are not, so run this pass after InferShape and
InferType and before PlanMemory.
"""
from mx_engine import Context
from mx_engine.base import MXNetError
from mx_ops import registry
from mx_ops.core.node import Node, NodeEntry

from mx_graph.graph import Graph

__all__ = ["place_device", "GROUP_KEY", "COPY_OP"]

GROUP_KEY = "__ctx_group__"
COPY_OP = "_CrossDeviceCopy"
_PER_ENTRY = ("shape", "dtype")


def place_device(graph, default_ctx, group2ctx, colocate_outputs=None):
    """``graph`` with every node placed and copies between devices.

    Parameters
    ----------
    graph : Graph
        May carry "forward_node" ({backward node id: forward Node}, from the
        Gradient pass) and "shape"/"dtype".
    default_ctx : Context
        Where nodes go that nothing places.
    group2ctx : dict of str -> Context
        The device of each ctx_group; a node in a group missing here is an
        error.
    colocate_outputs : dict of int -> Node, optional
        Graph output position -> a node of the graph whose device that
        output must be on (a gradient on its variable's device, where its
        array is); a dedicated copy is appended where it is computed
        elsewhere.
    """
    contexts, group_dev = _device_table(default_ctx, group2ctx)
    idx = graph.indexed
    n = idx.num_nodes
    src_of = [[idx.node_id(e.node) for e in node.inputs] for node in idx.nodes]
    fwd = _forward_ids(idx, graph.attrs.get("forward_node") or {})
    dev = _assign(idx, src_of, fwd, group_dev, group2ctx)
    _check_mutable_states(idx, src_of, dev, contexts)

    copy_op = registry.get(COPY_OP)
    new_node = [None] * n          # node id -> the node that replaces it
    copies = {}                    # (source node id, index, device) -> copy Node
    placed = {}                    # id of every node of the result -> device
    origin = {}                    # id of a node of the result -> old entry id of output 0

    def upstream(nid, e):
        return NodeEntry(new_node[nid], e.index) if new_node[nid] is not None else e

    def copy_node(nid, e, d):
        c = Node(copy_op, f"{e.node.name}_{e.index}_copy", {}, [upstream(nid, e)])
        placed[c._id] = d
        origin[c._id] = idx.entry_id(nid, e.index)
        return c

    for nid, node in enumerate(idx.nodes):
        d = dev[nid]
        inputs, changed = [], False
        for e, src in zip(node.inputs, src_of[nid]):
            if dev[src] != d:
                key = (src, e.index, d)
                if key not in copies:
                    copies[key] = copy_node(src, e, d)
                inputs.append(NodeEntry(copies[key], 0))
                changed = True
            else:
                inputs.append(upstream(src, e))
                changed |= new_node[src] is not None
        deps = [new_node[idx.node_id(c)] or c for c in node.control_deps]
        changed |= any(a is not b for a, b in zip(deps, node.control_deps))
        if changed:
            m = Node(node.op, node.name, node.params, inputs, dict(node.attrs))
            m.control_deps = deps
            new_node[nid] = m
            placed[m._id] = d
            origin[m._id] = idx.entry_id(nid, 0)
        else:
            placed[node._id] = d

    outputs = []
    for pos, e in enumerate(graph.outputs):
        nid = idx.node_id(e.node)
        out = upstream(nid, e)
        target = (colocate_outputs or {}).get(pos)
        if target is not None and dev[idx.node_id(target)] != dev[nid]:
            # Dedicated, so that the caller's array receives it alone.
            out = NodeEntry(copy_node(nid, e, dev[idx.node_id(target)]), 0)
        outputs.append(out)

    if not origin:                 # nothing crosses a device
        return graph.with_attrs(device=dev, device_ctx=[contexts[d] for d in dev])
    return _rebuilt(graph, outputs, placed, origin, new_node, contexts)


def _device_table(default_ctx, group2ctx):
    """([contexts by device id], {group: device id}): the default is id 0."""
    if not isinstance(default_ctx, Context):
        raise TypeError(f"place_device: default_ctx must be a Context, got "
                        f"{type(default_ctx).__name__}")
    if not isinstance(group2ctx, dict):
        raise TypeError(f"place_device: group2ctx must be a dict of group name -> Context, "
                        f"got {type(group2ctx).__name__}")
    contexts, group_dev = [default_ctx], {}
    for group, ctx in group2ctx.items():
        if not isinstance(ctx, Context):
            raise TypeError(f"place_device: group2ctx['{group}'] must be a Context "
                            f"(mx.cpu(1), mx.gpu(0)), got {type(ctx).__name__}")
        if ctx not in contexts:
            contexts.append(ctx)
        group_dev[group] = contexts.index(ctx)
    return contexts, group_dev


def _forward_ids(idx, forward_node):
    """Per node id: its forward node's id, or -1 (not a backward node)."""
    out = [-1] * idx.num_nodes
    for nid, node in enumerate(idx.nodes):
        f = forward_node.get(node._id)
        if f is not None and f._id in idx._nid:
            out[nid] = idx.node_id(f)
    return out


def _assign(idx, src_of, fwd, group_dev, group2ctx):
    """A device id per node (see the module's docstring)."""
    n = idx.num_nodes
    dev = [-1] * n
    for nid, node in enumerate(idx.nodes):
        group = node.attrs.get(GROUP_KEY)
        if group is None:
            continue
        if group not in group_dev:
            raise MXNetError(f"place_device: node '{node.name}' is in ctx_group '{group}', "
                             f"which group2ctx does not assign (it assigns "
                             f"{sorted(group2ctx)})")
        dev[nid] = group_dev[group]
    changed = True
    while changed:
        changed = False
        for nid in range(n):
            if dev[nid] != -1:
                continue
            if fwd[nid] >= 0:
                d = dev[fwd[nid]]
            else:
                d = next((dev[s] for s in src_of[nid] if dev[s] != -1), -1)
            if d != -1:
                dev[nid] = d
                changed = True
        for nid in reversed(range(n)):
            if dev[nid] == -1:
                continue
            for s in src_of[nid]:
                # A backward node follows its forward node, not its readers.
                if dev[s] == -1 and fwd[s] < 0:
                    dev[s] = dev[nid]
                    changed = True
    # Unreached by any group: forward nodes (and the nodes that nothing
    # else places) to the default device, backward nodes after them.
    for nid in range(n):
        if dev[nid] == -1 and fwd[nid] < 0:
            dev[nid] = 0
    for nid in range(n):
        f = nid
        while dev[f] == -1:        # a gradient of a gradient: up the chain
            f = fwd[f]
        dev[nid] = dev[f]
    return dev


def _check_mutable_states(idx, src_of, dev, contexts):
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            continue
        for k in node.op.mutated_inputs(node.params):
            src = src_of[nid][k]
            if dev[src] != dev[nid]:
                arg = node.op.input_names(node.params)[k]
                raise MXNetError(
                    f"place_device: '{node.name}' ({node.op.name}) writes its input '{arg}' "
                    f"('{idx.nodes[src].name}') in place, but that input is on "
                    f"{contexts[dev[src]]} and the node on {contexts[dev[nid]]}; a mutable "
                    f"state cannot go across devices: put both in one ctx_group")


def _rebuilt(graph, outputs, placed, origin, new_node, contexts):
    """The graph over the new nodes, with the attributes carried over."""
    old = graph.indexed
    g = Graph(outputs)
    idx = g.indexed
    device = [placed[node._id] for node in idx.nodes]
    # Old entry id per new entry: replaced and copy nodes through origin,
    # untouched nodes are the old ones.
    old_eid = []
    for node in idx.nodes:
        first = origin.get(node._id)
        if first is None:
            first = old.entry_id(old.node_id(node), 0)
        old_eid.extend(first + k for k in range(node.num_outputs))
    attrs = {k: v for k, v in graph.attrs.items()
             if not isinstance(v, (list, tuple, dict, set))}
    for key in _PER_ENTRY:
        if key in graph.attrs:
            values = graph.attrs[key]
            attrs[key] = [values[e] for e in old_eid]
    forward_node = graph.attrs.get("forward_node")
    if forward_node is not None:
        replaced = {node._id: m for node, m in zip(old.nodes, new_node) if m is not None}
        remapped = {}
        for node, m in zip(old.nodes, new_node):
            f = forward_node.get(node._id)
            if f is not None:
                remapped[(m or node)._id] = replaced.get(f._id, f)
        attrs["forward_node"] = remapped
    attrs["device"] = device
    attrs["device_ctx"] = [contexts[d] for d in device]
    g.attrs = attrs
    return g
