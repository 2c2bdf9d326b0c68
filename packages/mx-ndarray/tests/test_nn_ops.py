"""FullyConnected, Activation, LeakyReLU, softmax and Pooling through
mx_ndarray: the generated functions (FullyConnected without its bias input,
rrelu without its hidden mask), the engine path, and a small
forward/backward chain."""
import numpy as np
import pytest

from mx_engine import cpu
import mx_ndarray as nd
from mx_ops import invoke
from mx_ops.core import training
from mx_ops.core.registry import ShapeError
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest

rng = np.random.default_rng(3)


def test_mlp_forward_backward_on_the_engine():
    x = rng.standard_normal((4, 1, 6, 6)).astype(np.float32)
    w = rng.standard_normal((5, 9)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    p = nd.Pooling(nd.array(x), kernel=(2, 2), stride=(2, 2), pool_type="avg")
    h = nd.FullyConnected(p, nd.array(w), nd.array(b), num_hidden=5)
    a = nd.Activation(h, act_type="tanh")
    y = nd.softmax(a, axis=-1)
    p_ref = x.reshape(4, 1, 3, 2, 3, 2).mean(axis=(3, 5))
    h_ref = p_ref.reshape(4, 9) @ w.T + b
    e = np.exp(np.tanh(h_ref))
    np.testing.assert_allclose(y.asnumpy(), e / e.sum(-1, keepdims=True), rtol=1e-5)
    # backward of the chain, each step a _backward_* op on the engine
    og = nd.array(np.ones((4, 5), np.float32))
    da = nd._internal._backward_softmax(og, y)
    dh = nd._internal._backward_Activation(da, a, act_type="tanh")
    dp, dw, db = nd._internal._backward_FullyConnected(dh, p, nd.array(w), num_hidden=5)
    dx = nd._internal._backward_Pooling(dp, nd.array(x), p, kernel=(2, 2), stride=(2, 2),
                                        pool_type="avg")
    assert np.abs(da.asnumpy()).max() < 1e-5     # softmax of ones-gradient: zero
    assert dx.shape == x.shape and dw.shape == w.shape and db.shape == b.shape


def test_no_bias_and_prelu_inputs():
    x = nd.array(rng.standard_normal((3, 4)).astype(np.float32))
    w = rng.standard_normal((2, 4)).astype(np.float32)
    y = nd.FullyConnected(x, nd.array(w), num_hidden=2, no_bias=True)
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() @ w.T, rtol=1e-5)
    g = nd.array(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    out = nd.LeakyReLU(x, g, act_type="prelu")
    xv = x.asnumpy()
    np.testing.assert_allclose(out.asnumpy(), np.where(xv > 0, xv, xv * g.asnumpy()),
                               rtol=1e-6)
    with pytest.raises(ShapeError, match="FullyConnected: argument 'weight' has shape"):
        nd.FullyConnected(x, nd.array(w.T.copy()), num_hidden=2, no_bias=True)


def test_rrelu_returns_output_and_mask_and_draws_in_training():
    """LeakyReLU(act_type='rrelu') returns (output, mask), both visible as
    in MXNet; in training its negatives carry slopes drawn from the CPU's
    RANDOM stream at push time, which the mask holds."""
    x = rng.standard_normal((4, 5)).astype(np.float32)
    a = nd.array(x)
    r = resource.request(cpu(0), ResourceRequest.RANDOM)
    seed, offset = r.seed, r.offset
    with training.train_mode():
        y, mask = nd.LeakyReLU(a, act_type="rrelu")
    assert isinstance(y, nd.NDArray) and y.shape == x.shape
    assert r.offset == offset + x.size
    slopes = _philox.uniform(seed, offset, x.size, 0.125, 0.334).reshape(x.shape)
    np.testing.assert_array_equal(y.asnumpy(), np.where(x > 0, x, slopes * x))
    np.testing.assert_array_equal(mask.asnumpy(), slopes)
    y, mask = nd.LeakyReLU(a, act_type="rrelu")             # inference: the mean slope
    assert isinstance(y, nd.NDArray) and r.offset == offset + x.size
    np.testing.assert_array_equal(y.asnumpy(), invoke("LeakyReLU", [x], act_type="rrelu")[0])
    # the backward reads the mask the invoker keeps
    out, mask = invoke("LeakyReLU", [x], act_type="rrelu")
    og = nd.array(np.ones_like(x))
    dx = nd._internal._backward_LeakyReLU(og, nd.array(mask), nd.array(out), act_type="rrelu")
    np.testing.assert_allclose(dx.asnumpy(), np.where(x > 0, 1.0, (0.125 + 0.334) / 2),
                               rtol=1e-6)
