"""mx.random and mx.nd.random together, as an MXNet 1.x script uses them."""
import numpy as np
import pytest

import mx


def test_mx_random_seed_repeats_draws_on_every_path():
    mx.random.seed(128)
    a = [mx.nd.random.uniform(shape=(5,)), mx.random.normal(shape=(5,)),
         mx.random.randint(0, 10, shape=(5,)), mx.nd.uniform(shape=(5,))]
    mx.random.seed(128)
    b = [mx.random.uniform(shape=(5,)), mx.nd.random.normal(shape=(5,)),
         mx.nd.random.randint(0, 10, shape=(5,)), mx.nd.random_uniform(shape=(5,))]
    for x, y in zip(a, b):
        assert np.array_equal(x.asnumpy(), y.asnumpy())
    mx.random.seed(129)
    assert not np.array_equal(mx.random.uniform(shape=(5,)).asnumpy(), a[0].asnumpy())


def test_seed_of_one_context():
    mx.random.seed(3, ctx=mx.cpu(0))
    a = mx.random.uniform(shape=(8,), ctx=mx.cpu(0))
    mx.random.seed(3, ctx=mx.cpu(0))
    assert np.array_equal(mx.random.uniform(shape=(8,), ctx=mx.cpu(0)).asnumpy(), a.asnumpy())
    with pytest.raises(ValueError, match="'seed_state' must be int"):
        mx.random.seed(1.5)
    with pytest.raises(TypeError, match="'ctx' must be a Context or 'all'"):
        mx.random.seed(1, ctx="cpu")


def test_shuffle_through_mx_random():
    x = mx.nd.array(np.arange(10, dtype=np.float32))
    assert sorted(mx.random.shuffle(x).asnumpy().tolist()) == list(range(10))
