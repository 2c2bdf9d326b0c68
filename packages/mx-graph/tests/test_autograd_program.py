"""mx-graph's backward programs for mx-ndarray's autograd tape: built by
the Gradient pass once per tape structure, then replayed; calls whose
outputs no one reads get kNullOp; a gradient only its variable reads is
written straight into the grad array."""
import numpy as np
import pytest

import mx_graph  # noqa: F401  (registers the builder)
import mx_ndarray as nd
from mx_graph.autograd import program
from mx_ndarray import _autograd, autograd


@pytest.fixture
def builds(monkeypatch):
    """The programs built during a test, as (steps, results)."""
    built = []

    def spy(*args):
        out = program.build_program(*args)
        built.append(out)
        return out
    previous = _autograd.set_program_builder(spy)     # also empties the cache
    yield built
    _autograd.set_program_builder(previous)


def fc_step(x, w, b, scale):
    with autograd.record():
        y = nd.FullyConnected(x, w, b, num_hidden=3)
        loss = nd.sum(nd.relu(y) * scale)
    loss.backward()
    return w.grad.asnumpy().copy(), b.grad.asnumpy().copy()


def test_program_built_once_per_structure(builds):
    rng = np.random.default_rng(0)
    w, b = nd.array(rng.standard_normal((3, 4))), nd.array(rng.standard_normal(3))
    w.attach_grad()
    b.attach_grad()
    xs = [nd.array(rng.standard_normal((5, 4))) for _ in range(3)]
    results = [fc_step(x, w, b, 2.0) for x in xs]
    assert len(builds) == 1
    # Each replay computes its own tape's gradients (NumPy reference).
    for x, (gw, gb) in zip(xs, results):
        xv = x.asnumpy()
        y = xv @ w.asnumpy().T + b.asnumpy()
        og = 2.0 * (y > 0)
        np.testing.assert_allclose(gw, og.T @ xv, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb, og.sum(0), rtol=1e-5, atol=1e-6)
    # Another shape, another grad_req or another scalar is another structure.
    fc_step(nd.array(rng.standard_normal((6, 4))), w, b, 2.0)
    fc_step(xs[0], w, b, 3.0)
    b.attach_grad("add")
    fc_step(xs[0], w, b, 2.0)
    assert len(builds) == 4


def test_unread_outputs_are_null_requests(builds):
    """The data gradient of a constant input is never computed (kNullOp);
    the weight's goes to w.grad without a copy."""
    rng = np.random.default_rng(1)
    x = nd.array(rng.standard_normal((5, 4)))
    w = nd.array(rng.standard_normal((3, 4)))
    w.attach_grad()
    with autograd.record():
        y = nd.FullyConnected(x, w, num_hidden=3, no_bias=True)
    y.backward()
    steps, results = builds[0]
    (fc,) = [s for s in steps if s[0].op.name == "_backward_FullyConnected"]
    plan, ins, nvisible, reqs, direct = fc
    assert np.frombuffer(reqs, np.int32).tolist() == [0, 1]     # data_grad null, weight write
    assert direct == ((1, 0),)      # the weight gradient goes straight into w.grad
    np.testing.assert_allclose(w.grad.asnumpy(), np.ones((5, 3)).T @ x.asnumpy(), rtol=1e-5)
    grad = w.grad
    with autograd.record():
        y = nd.FullyConnected(x * 2, w, num_hidden=3, no_bias=True)
    y.backward()
    assert w.grad is grad           # the same array, written in place
    np.testing.assert_allclose(grad.asnumpy(), np.ones((5, 3)).T @ (2 * x.asnumpy()),
                               rtol=1e-5)
