"""An asynchronous error is raised once and then gone, as in MXNet 1.9: the
wait that raises it clears it from every array that carried it, so waitall,
later writes into those arrays and executor re-runs see it no more.
MXNet 1.9.1 itself does exactly this on the first two cases
(tests/data/mxnet_error_clearing.py, its output in the docstring)."""
import numpy as np
import pytest

import mx
from mx.base import MXNetError


def _failing_take():
    a = mx.nd.array([1.0, 2.0])
    return a, mx.nd.take(a, mx.nd.array([0, 5]), mode="raise")


def test_waitall_does_not_raise_an_error_already_raised():
    a, c = _failing_take()
    d = c + 1                                   # carries the error too
    with pytest.raises(MXNetError, match="take"):
        c.wait_to_read()
    mx.nd.waitall()
    d.wait_to_read()


def test_a_later_write_into_the_failed_output_runs():
    a, c = _failing_take()
    d = c * 2
    with pytest.raises(MXNetError, match="take"):
        d.asnumpy()
    mx.nd.take(a, mx.nd.array([1, 0]), mode="raise", out=c)
    np.testing.assert_array_equal(c.asnumpy(), [2.0, 1.0])
    np.testing.assert_array_equal((c * 2).asnumpy(), [4.0, 2.0])


def test_an_executor_rerun_with_corrected_inputs_works():
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    net = mx.sym.take(x, i, mode="raise") * 2 + 1
    ex = net.bind(mx.cpu(), {"x": mx.nd.array([1.0, 2.0]), "i": mx.nd.array([0, 7])})
    ex.forward()
    with pytest.raises(MXNetError, match="take"):
        ex.outputs[0].asnumpy()
    ex.arg_dict["i"][:] = mx.nd.array([1, 0])
    ex.forward()
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [5.0, 3.0])


def test_an_error_not_yet_raised_still_reaches_its_dependents():
    a, c = _failing_take()
    d = (c + 1) * 3
    with pytest.raises(MXNetError, match="take"):
        d.asnumpy()                             # raised at the dependent, once
    c.wait_to_read()
