"""How an executor runs a graph with sparse entries (a csr or row_sparse
argument, or an operator whose storage rule makes an output sparse, as
Embedding(sparse_grad=True) makes its weight gradient row_sparse).

A sparse array's stored size is known only when its kernel runs, so such a
graph is not memory-planned: as for dynamic shapes, the passes run node by
node (dynamic_run).  A node whose inputs and outputs are all dense (by the
InferStorageType pass) pushes its dense kernel as a PreparedCall; a node
with a sparse entry is an imperative call, whose storage dispatch runs the
operator's sparse kernel or MXNet's dense fallback (inputs cast to dense,
the dense kernel, outputs cast back).  The gradients reach their arrays in
the arrays' storage types, as mx_ndarray's autograd stores them."""
from mx_ndarray import _autograd
from mx_ndarray._invoke import call
from mx_ops.core import training
from mx_ops.core._call import get_plan

from mx_graph.dynamic_run import DynamicPasses

__all__ = ["StoragePasses"]


class StoragePasses(DynamicPasses):
    """The forward and backward passes of a bound graph with sparse entries."""

    def __init__(self, bound, ctx, named_inputs, grad_arrays):
        super().__init__(bound, ctx, named_inputs, grad_arrays)
        idx = self._idx
        stypes = bound.stypes
        self._sparse_nodes = set()
        for nid, node in enumerate(idx.nodes):
            if node.is_variable:
                continue
            row, end = idx.node_row_ptr[nid], idx.node_row_ptr[nid + 1]
            entries = list(idx.inputs[nid]) + list(range(row, end))
            if any(stypes[e] != "default" for e in entries):
                self._sparse_nodes.add(node._id)

    def _run(self, start, stop, is_train, monitor):
        was_training = training.set_training(is_train)
        try:
            super()._run(start, stop, is_train, monitor)
        finally:
            training.set_training(was_training)

    def _compute(self, node, inputs, is_train):
        if node._id not in self._sparse_nodes:
            return super()._compute(node, inputs, is_train)
        out = call(get_plan(node.op, len(inputs), node.params), inputs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def _write_grad(self, eid, value):
        dst, req = self._grads[eid]
        _autograd.store_grad(dst, value, req)
