"""InferStorageType: the storage type of every entry of a bound graph
(MXNet's FInferStorageType pass), from the arguments' storage types and
each operator's storage rule (the registry's ``infer_storage``,
mx_ops.core.stype); an operator without one gives dense outputs.

The executor binds a graph node by node through the imperative storage
dispatch only when some entry is sparse; the dense plan is untouched
otherwise.  What the pass gives a gradient entry is the storage of the
gradient array simple_bind allocates (Embedding(sparse_grad=True)'s
weight: row_sparse)."""
from mx_ops.core._call import get_plan
from mx_ops.core.stype import storage_inference

from mx_graph.passes.place_device import COPY_OP

__all__ = ["infer_storage", "may_be_sparse"]


def may_be_sparse(graph, known):
    """Whether some entry of ``graph`` may be sparse: a known sparse input,
    or an operator whose rule gives sparse outputs from dense inputs for
    its parameters (a cheap test: the dense bind skips the pass)."""
    if any(s != "default" for s in known.values()):
        return True
    for node in graph.indexed.nodes:
        if node.is_variable or not getattr(node.op, "sparse_from_dense", False):
            continue
        if get_plan(node.op, len(node.inputs), node.params).sparse_outputs:
            return True
    return False


def infer_storage(graph, known, device):
    """Entry id -> storage type name for every entry of ``graph``;
    ``known`` gives the input entries' ('default' where absent), ``device``
    is 'cpu' or 'gpu'."""
    idx = graph.indexed
    stypes = ["default"] * idx.num_entries
    for eid, s in known.items():
        stypes[eid] = s
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            continue
        row = idx.node_row_ptr[nid]
        in_stypes = [stypes[e] for e in idx.inputs[nid]]
        if node.op.name == COPY_OP:
            stypes[row] = in_stypes[0]
            continue
        plan = get_plan(node.op, len(node.inputs), node.params)
        out_stypes, _ = storage_inference(node.op, plan.params, in_stypes, device, plan.nout)
        for i, s in enumerate(out_stypes):
            stypes[row + i] = s
    return stypes
