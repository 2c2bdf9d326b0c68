"""concat, split, take, one_hot and the init ops through mx_ndarray: the
generated functions, the engine path and mx.nd.concatenate."""
import numpy as np
import pytest

import mx_ndarray as nd
from mx_ops.core.registry import ShapeError

rng = np.random.default_rng(2)


def arr(shape, dtype="float32"):
    return rng.uniform(-10, 10, shape).astype(dtype)


def test_concat_is_variadic_and_fills_num_args():
    a, b, c = arr((2, 3)), arr((2, 1)), arr((2, 4))
    got = nd.concat(nd.array(a), nd.array(b), nd.array(c))            # dim defaults to 1
    np.testing.assert_array_equal(got.asnumpy(), np.concatenate([a, b, c], 1))
    got = nd.Concat(nd.array(a), nd.array(a), dim=0)
    np.testing.assert_array_equal(got.asnumpy(), np.concatenate([a, a], 0))
    out = nd.zeros((2, 8))
    nd.concat(nd.array(a), nd.array(b), nd.array(c), dim=-1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate([a, b, c], 1))
    with pytest.raises(ShapeError, match="Concat: argument 'arg1' has shape \\(3, 3\\)"):
        nd.concat(nd.array(a), nd.array(arr((3, 3))), dim=1)
    with pytest.raises(ValueError, match="'num_args' is 3, but 2 input"):
        nd.concat(nd.array(a), nd.array(a), num_args=3)
    with pytest.raises(TypeError, match="Concat: argument 'arg1' must be an NDArray"):
        nd.concat(nd.array(a), a)


def test_split_returns_a_list():
    x = arr((2, 6, 3), "int32")
    parts = nd.split(nd.array(x), num_outputs=3, axis=1)
    assert isinstance(parts, list) and len(parts) == 3
    for p, w in zip(parts, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(p.asnumpy(), w)
    parts = nd.SliceChannel(nd.array(x), num_outputs=2, axis=0, squeeze_axis=True)
    np.testing.assert_array_equal(parts[1].asnumpy(), x[1])
    single = nd.split(nd.array(x), num_outputs=1)          # one output: an NDArray, as MXNet
    assert isinstance(single, nd.NDArray) and single.shape == x.shape
    with pytest.raises(ShapeError, match="size 6, which num_outputs=4 does not divide"):
        nd.split(nd.array(x), num_outputs=4)


def test_take_and_one_hot():
    a = arr((5, 4))
    idx = np.array([[0, 4], [7, -1]], np.float32)
    got = nd.take(nd.array(a), nd.array(idx))
    np.testing.assert_array_equal(got.asnumpy(), a[np.clip(idx.astype(int), 0, 4)])
    got = nd.take(nd.array(a), nd.array(idx), axis=1, mode="wrap")
    np.testing.assert_array_equal(got.asnumpy(), np.take(a, idx.astype(int), 1, mode="wrap"))
    oh = nd.one_hot(nd.array(np.array([1, 0, 3], np.int32)), depth=3, dtype="int64",
                    on_value=5)
    assert oh.dtype == np.int64
    np.testing.assert_array_equal(oh.asnumpy(), [[0, 5, 0], [5, 0, 0], [0, 0, 0]])
    with pytest.raises(ShapeError, match="one_hot: argument 'depth' must be positive"):
        nd.one_hot(nd.array(np.ones(2)), depth=0)


def test_init_ops_run_through_the_registry():
    z = nd.zeros((2, 3), dtype="int8")
    assert z.dtype == np.int8 and z.asnumpy().tolist() == [[0] * 3] * 2
    assert nd.ones(3, dtype=None).dtype == np.float32
    np.testing.assert_array_equal(nd.ones((0, 2)).asnumpy(), np.ones((0, 2)))
    np.testing.assert_array_equal(nd._internal._zeros(shape=(2,)).asnumpy(), [0, 0])
    np.testing.assert_array_equal(nd.arange(5).asnumpy(), np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(nd.arange(1, 2, 0.25, repeat=2, dtype="float64").asnumpy(),
                                  np.repeat(np.arange(1, 2, 0.25), 2))
    got = nd.arange(0.1, 100.05, 0.1).asnumpy()
    np.testing.assert_array_equal(got, (0.1 + np.arange(1000) * 0.1).astype(np.float32))
    with pytest.raises(ShapeError, match="_arange: invalid range"):
        nd.arange(3, 1)


def test_concatenate():
    xs = [arr((2, 3)), arr((1, 3)), arr((4, 3))]
    got = nd.concatenate([nd.array(x) for x in xs])
    np.testing.assert_array_equal(got.asnumpy(), np.concatenate(xs, 0))
    got = nd.concatenate([nd.array(x.T) for x in xs], axis=1)
    np.testing.assert_array_equal(got.asnumpy(), np.concatenate([x.T for x in xs], 1))
    one = nd.array(xs[0])
    assert nd.concatenate([one], always_copy=False) is one
    copy = nd.concatenate([one])
    assert copy is not one
    np.testing.assert_array_equal(copy.asnumpy(), xs[0])
    many = [arr((1, 2)) for _ in range(70)]                  # more than 32 arrays in one call
    np.testing.assert_array_equal(nd.concatenate([nd.array(m) for m in many]).asnumpy(),
                                  np.concatenate(many, 0))
    with pytest.raises(ValueError, match="concatenate: argument 'arrays' must hold at least"):
        nd.concatenate([])
    with pytest.raises(TypeError, match=r"concatenate: arrays\[1\] must be an NDArray"):
        nd.concatenate([one, xs[0]])
