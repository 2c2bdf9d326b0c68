"""How an executor runs a graph that holds a dynamic-shape operator
(``OpDef.dynamic_shape``: MXNet's boolean_mask), whose output shapes its
input values decide.

Shapes downstream of such a node are not known at bind time, so nothing
can be planned or allocated ahead: as MXNet's GraphExecutor does for
dynamic shapes, the passes run node by node, each node's output shapes
inferred from its inputs' actual shapes and its outputs allocated then
(from the pool), its kernel pushed as a PreparedCall.  A dynamic-shape
node waits for the values that decide its shape (mx_ndarray._dynamic).
The graph is the one bind built, forward and backward nodes alike, so the
gradients are those of the Gradient pass and reach the gradient arrays
with their grad_req.
"""
from mx_engine._engine import _set_symbolic
from mx_ndarray import _dynamic, empty
from mx_ndarray.prepared import PreparedCall

__all__ = ["DynamicPasses"]


class DynamicPasses:
    """The forward and backward passes of a bound graph with dynamic
    shapes; ``values`` holds every entry's array of the last passes."""

    def __init__(self, bound, ctx, named_inputs, grad_arrays):
        self._bound = bound
        self._ctx = ctx
        idx = bound.graph.indexed
        self._idx = idx
        self._inputs = {idx.entry_id(e): named_inputs[name]
                        for name, e in bound.variables.items() if e.node._id in idx._nid}
        # entry id -> (gradient array, req) for the entries written to grads
        self._grads = {idx.entry_id(e): (grad_arrays[name], bound.grad_reqs[name])
                       for name, e in bound.grad_entries.items()}
        self.values = {}

    def forward(self, is_train, monitor):
        self.values = dict(self._inputs)
        self._run(0, self._bound.num_forward_nodes, is_train, monitor)
        idx = self._idx
        return [self.values[eid] for eid in idx.outputs[:len(self._bound.output_names)]]

    def backward(self, head_grads, is_train, monitor):
        """``head_grads``: output index -> its gradient NDArray."""
        idx = self._idx
        for i, g in head_grads.items():
            self.values[idx.entry_id(self._bound.head_grads[i])] = g
        self._run(self._bound.num_forward_nodes, len(idx.nodes), is_train, monitor)

    def _run(self, start, stop, is_train, monitor):
        idx, values = self._idx, self.values
        prev = _set_symbolic(True)
        try:
            for nid in range(start, stop):
                node = idx.nodes[nid]
                if node.is_variable:
                    continue
                inputs = [values[e] for e in idx.inputs[nid]]
                outputs = self._compute(node, inputs, is_train)
                row = idx.node_row_ptr[nid]
                for i, out in enumerate(outputs):
                    values[row + i] = out
                    if row + i in self._grads:
                        self._write_grad(row + i, out)
                if monitor is not None:
                    monitor(node, inputs, outputs)
        finally:
            _set_symbolic(prev)

    def _compute(self, node, inputs, is_train):
        op = node.op
        if getattr(op, "dynamic_shape", False):
            return _dynamic.compute(op, node.params, inputs)
        params = node.params
        shapes = op.infer_shape(params, [a.shape for a in inputs])
        dtypes = op.infer_type(params, [a.dtype.name for a in inputs])
        ctx = inputs[0].context if inputs else self._ctx
        outputs = [empty(tuple(s), ctx=ctx, dtype=t) for s, t in zip(shapes, dtypes)]
        PreparedCall(op, params, inputs, outputs, ["write"] * len(outputs)).push(is_train)
        return outputs

    def _write_grad(self, eid, value):
        dst, req = self._grads[eid]
        if req == "add":
            dst += value
        else:
            value.copyto(dst)
