"""Autograd for imperative code, as MXNet 1.9.1's ``mxnet.autograd``.

Recording, ``backward`` and ``grad`` are mx-ndarray's (the tape lives in
its call path); importing mx-graph registers the backward programs and
gives ``get_symbol``.  ``Function`` records a user-defined forward and
backward as one node.
"""
from mx_graph.autograd import get_symbol
from mx_ndarray import _autograd
from mx_ndarray._tape import AGInfo
from mx_ndarray.autograd import (backward, grad, is_recording, is_training, mark_variables,
                                 pause, predict_mode, record, set_recording, set_training,
                                 train_mode)
from mx_ndarray.ndarray import NDArray
from mx_ops import registry
from mx_ops.core.node import Node, NodeEntry

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad",
           "get_symbol", "Function"]


class Function:
    """A differentiable function with a user-defined ``forward`` and
    ``backward`` on NDArrays, for operations the operators do not cover or
    a custom gradient.  Each instance is called once::

        class Sigmoid(mx.autograd.Function):
            def forward(self, x):
                y = 1 / (1 + mx.nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keeps ``args`` as ``saved_tensors`` for backward."""
        self.saved_tensors = args

    def __call__(self, *inputs):
        assert not self._used, ("Each Function instance can only be called once. Please "
                                "create another instance.")
        self._used = True
        prev_recording = set_recording(False)
        try:
            outputs = self.forward(*inputs)
        finally:
            set_recording(prev_recording)
        if not prev_recording:
            return outputs
        ret_outputs = outputs
        if isinstance(outputs, NDArray):
            outputs = (outputs,)
        for x in tuple(inputs) + tuple(outputs):
            if not isinstance(x, NDArray):
                raise TypeError(f"{type(self).__name__}: a Function's inputs and outputs must "
                                f"be NDArrays, got {type(x).__name__}")
        _record(self, inputs, outputs)
        return ret_outputs

    def forward(self, *inputs):
        """The forward computation (runs without recording)."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """The gradients of the inputs from those of the outputs: as many
        NDArrays as forward took."""
        raise NotImplementedError


def _on_tape(x):
    return x._ag_node is not None and x._ag_node.info is not None


def _record(fn, inputs, outputs):
    """Records ``fn`` as a _CustomFunction node when an input is on the
    tape (as the call path records an operator)."""
    if not any(_on_tape(x) for x in inputs):
        return
    fn._ag_attrs = {"in_shapes": [x.shape for x in inputs],
                    "in_dtypes": [x.dtype.name for x in inputs],
                    "out_shapes": [y.shape for y in outputs],
                    "out_dtypes": [y.dtype.name for y in outputs]}
    entries = []
    for x in inputs:
        if _on_tape(x):
            entries.append(NodeEntry(x._ag_node, x._ag_index))
        else:
            const = Node(None, "const", {}, ())
            const.info = AGInfo([x])
            entries.append(NodeEntry(const, 0))
    op = registry.get("_CustomFunction")
    node = Node(op, type(fn).__name__, op.parse_call({"_function": fn}, len(inputs)), entries)
    node.info = AGInfo([_autograd.detach(y) for y in outputs])   # sig None: never cached
    for i, y in enumerate(outputs):
        if _on_tape(y):
            raise registry.MXNetError(f"{type(fn).__name__}: forward returned an array that "
                                      f"is already in a computational graph; return new "
                                      f"arrays")
        y._ag_node = node
        y._ag_index = i
