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


def test_rrelu_slopes_follow_mx_random_seed():
    """mx.nd.LeakyReLU(act_type='rrelu') in training returns the output and
    its mask (MXNet's two visible outputs), with slopes that mx.random.seed
    repeats."""
    from mx_ops.core import training
    x = mx.nd.array(-np.ones((50, 40), np.float32))
    outs = []
    for _ in range(2):
        mx.random.seed(31)
        with training.train_mode():
            y, mask = mx.nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
        assert isinstance(y, mx.nd.NDArray) and y.shape == x.shape
        np.testing.assert_array_equal(mask.asnumpy(), -y.asnumpy())      # x is -1
        outs.append(y.asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    slopes = -outs[0]
    assert slopes.min() >= np.float32(0.1) and slopes.max() < np.float32(0.3)
    assert len(np.unique(slopes)) > 1900                     # one slope per element
    mean, _ = mx.nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    np.testing.assert_allclose(mean.asnumpy(), -0.2)          # inference: the mean slope
