import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.core.registry import ShapeError

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4)])
def test_full(dtype, shape):
    got = invoke("_full", [], shape=shape, dtype=dtype, value=7)
    np.testing.assert_array_equal(got, np.full(shape, 7, dtype))
    out = np.ones(shape, dtype)
    invoke("_full", [], out=out, req="add", shape=shape, dtype=dtype, value="2")
    np.testing.assert_array_equal(out, np.full(shape, 3, dtype))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_cast_matches_numpy_for_values_every_dtype_holds(src, dst):
    x = np.array([0, 1, 2, 7, 100, 126], dtype=src)
    got = invoke("Cast", [x], dtype=dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, x.astype(dst))
    assert invoke("cast", [x.reshape(2, 3)], dtype=dst).shape == (2, 3)


def test_cast_truncates_floats_toward_zero():
    np.testing.assert_array_equal(invoke("Cast", [np.array([-1.7, 1.7], np.float32)],
                                         dtype="int32"), [-1, 1])


def test_bad_init_arguments():
    with pytest.raises(ShapeError,
                       match=r"_full: argument 'shape' is \(2, -1\).*dimension 1 is -1, a neg"):
        invoke("_full", [], shape=(2, -1))
    with pytest.raises(ValueError, match="Cast: argument 'dtype' is required"):
        invoke("Cast", [np.ones(2)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 1, 3), (1, 2, 2, 1), (2, 1, 1, 2, 2)])
def test_zeros_and_ones(dtype, shape):
    for name, value in (("_zeros", 0), ("_ones", 1)):
        got = invoke(name, [], shape=shape, dtype=dtype)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, np.full(shape, value, dtype))
        out = np.full(shape, 5, dtype)
        invoke(name, [], out=out, req="add", shape=shape, dtype=dtype)
        np.testing.assert_array_equal(out, np.full(shape, 5 + value, dtype))
    assert invoke("_zeros", [], shape=(2,)).dtype == np.float32


def reference_arange(start, stop=None, step=1.0, repeat=1, dtype="float32"):
    """MXNet's _arange: start + i * step in float64, cast, each repeated."""
    if stop is None:
        start, stop = 0.0, start
    n = int(np.ceil((stop - start) / step))
    values = start + np.arange(n, dtype=np.float64) * step
    return np.repeat(values, repeat).astype(dtype)


ARANGE_ARGS = [
    dict(start=5), dict(start=2, stop=11, step=3), dict(start=0, stop=1, step=0.1),
    dict(start=10, stop=-3, step=-2.5, repeat=3), dict(start=1.5, stop=4, repeat=2),
]


# Negative values do not fit uint8, so that pair is not a case.
@pytest.mark.parametrize("dtype, args", [
    (t, a) for t in DTYPES for a in ARANGE_ARGS
    if not (t == "uint8" and min(a.get("stop", 0), a["start"]) < 0)])
def test_arange(dtype, args):
    got = invoke("_arange", [], dtype=dtype, **args)
    want = reference_arange(dtype=dtype, **args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    out = np.ones(want.shape, dtype)
    invoke("_arange", [], out=out, req="add", dtype=dtype, **args)
    np.testing.assert_array_equal(out, (np.ones(want.shape, dtype) + want).astype(dtype))


def test_arange_float32_matches_float64_accumulation():
    got = invoke("_arange", [], start=0.1, stop=1000.05, step=0.1)
    assert got.shape == (10000,)
    np.testing.assert_array_equal(got, (0.1 + np.arange(10000) * 0.1).astype(np.float32))


@pytest.mark.parametrize("kwargs, text", [
    (dict(start=0), "_arange: invalid range (start, stop, step) = (0.0, 0.0, 1.0)"),
    (dict(start=3, stop=1), "invalid range (start, stop, step) = (3.0, 1.0, 1.0)"),
    (dict(start=1, stop=3, step=-1), "invalid range"),
    (dict(start=1, stop=3, step=0), "_arange: argument 'step' may not be 0"),
    (dict(start=4, infer_range=True), "infer_range=True with stop=None"),
])
def test_arange_errors(kwargs, text):
    with pytest.raises(ShapeError) as info:
        invoke("_arange", [], **kwargs)
    assert text in str(info.value)
    with pytest.raises(ValueError, match="_arange: argument 'repeat' must be in"):
        invoke("_arange", [], start=3, repeat=0)


def test_init_ops_take_the_device_string_of_mxnet_graphs():
    # -symbol.json stores ctx="cpu(0)" on init nodes; it must parse.
    for name in ("_zeros", "_ones", "_full"):
        assert invoke(name, [], shape="(2, 3)", ctx="cpu(0)").shape == (2, 3)
    assert invoke("_arange", [], start="0", stop="4", ctx="cpu(0)").tolist() == [0, 1, 2, 3]
