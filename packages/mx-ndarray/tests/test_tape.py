"""The autograd tape, mx-ndarray's side: what the call path records (the
nodes, their kept values, constants), when it records (thread-local flag,
inputs on the tape), MXNet's errors, and backward without mx-graph.  The
gradients themselves are tested with mx-graph in tests/test_autograd.py."""
import threading

import numpy as np
import pytest

import mx_ndarray as nd
from mx_engine.base import MXNetError
from mx_ndarray import _autograd, autograd
from mx_ops.core import training
from mx_ops.core.node import Node, NodeEntry


def variable(value, grad_req="write"):
    x = nd.array(value)
    x.attach_grad(grad_req)
    return x


def test_recording_flag_lives_in_training_state():
    assert training._state.record is False
    with autograd.record():
        assert training._state.record is True and training._state.train is True
    assert training._state.record is False and training._state.train is False


def test_recorded_node_and_entries():
    x = variable([1.0, -2.0, 3.0])
    c = nd.array([2.0, 2.0, 2.0])
    with autograd.record():
        y = nd.relu(x)
        z = y * c
        s = z * 0.5
    assert y._ag_node.op.name == "relu" and y._ag_node.inputs[0].node is x._ag_node
    # Built without Node.__init__: every slot set, entries real NodeEntries.
    for slot in Node.__slots__:
        getattr(y._ag_node, slot)
    assert type(y._ag_node) is Node and type(y._ag_node.inputs[0]) is NodeEntry
    assert y._ag_node.inputs[0] == (x._ag_node, 0) and y._ag_node.inputs[0].index == 0
    assert not y._ag_node.control_deps and not y._ag_node.attrs
    node = z._ag_node
    assert node.op.name == "broadcast_mul"
    assert node.inputs[0].node is y._ag_node
    const = node.inputs[1].node
    assert const.op is None and const.info.grad_req is None     # a constant input
    assert const.info.outputs[0] is c and c._ag_node is None
    # The scalar packed per call is on the node.
    assert s._ag_node.params["scalar"] == 0.5
    # The node keeps its outputs detached: no cycle array -> node -> array.
    kept = node.info.outputs[0]
    assert kept is not z and kept._ag_node is None
    np.testing.assert_array_equal(kept.asnumpy(), z.asnumpy())


def test_not_recorded_without_record_or_tape_input():
    x = variable([1.0, 2.0])
    assert (x * 2)._ag_node is None                     # not recording
    with autograd.record():
        assert (nd.ones(2) * 2)._ag_node is None        # no input on the tape
        with autograd.pause():
            assert (x * 2)._ag_node is None


def test_hidden_outputs_are_kept():
    x = variable(np.ones((10, 10), np.float32))
    with autograd.record():
        y = nd.Dropout(x, p=0.5)
    out, mask = y._ag_node.info.outputs
    assert mask.shape == (10, 10)
    np.testing.assert_array_equal(out.asnumpy() != 0, mask.asnumpy() != 0)


def test_recording_is_thread_local():
    x = variable([1.0])
    got = {}

    def worker():
        got["y"] = x * 2

    with autograd.record():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert got["y"]._ag_node is None


def test_assigning_to_arrays_on_the_tape_raises():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * 2
        with pytest.raises(MXNetError, match="Assigning to NDArrays that are already"):
            y += 1
        with pytest.raises(MXNetError, match="Assigning to NDArrays that are already"):
            nd.relu(y, out=x)


def test_attach_grad_grad_detach():
    x = nd.array([1.0, 2.0])
    assert x.grad is None
    x.attach_grad()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0])
    x.attach_grad("null")
    assert x.grad is None
    d = x.detach()
    assert d._ag_node is None
    np.testing.assert_array_equal(d.asnumpy(), [1, 2])
    with pytest.raises(ValueError, match="grad_req must be one of"):
        x.attach_grad("often")


def test_backward_errors_without_graph_or_mx_graph():
    x = variable([1.0, 2.0])
    with pytest.raises(MXNetError, match="not in a computational graph"):
        (x * 2).backward()
    with autograd.record():
        y = x * 2
    previous = _autograd.set_program_builder(None)
    try:
        with pytest.raises(MXNetError, match="needs mx-graph"):
            y.backward()
    finally:
        _autograd.set_program_builder(previous)
