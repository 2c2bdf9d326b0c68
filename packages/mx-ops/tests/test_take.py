"""take and one_hot against NumPy: every dtype of data and indices, every
mode, 0-size, 1-d..5-d, every req."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_engine.base import MXNetError
from mx_ops import invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError
from mx_ops.test_utils import kernel_threads

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
rng = np.random.default_rng(1)


def reference_take(a, idx, axis, mode):
    """NumPy's take after MXNet's cast of the indices to integers."""
    return np.take(a, np.trunc(idx.astype(np.float64)).astype(np.int64), axis=axis,
                   mode="clip" if mode == "clip" else "wrap")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (4, 5), (3, 4, 2), (2, 3, 1, 4), (2, 1, 3, 2, 3)])
def test_take_every_axis_and_mode(dtype, shape):
    a = rng.uniform(0, 100, shape).astype(dtype)
    for axis in range(-len(shape), len(shape)):
        n = shape[axis]
        for idx_dtype in DTYPES:
            lo = 0 if idx_dtype == "uint8" else -2 * n - 1
            idx = rng.integers(lo, 2 * n + 2, (2, 3)).astype(idx_dtype)
            for mode in ("clip", "wrap"):
                got = invoke("take", [a, idx], axis=axis, mode=mode)
                np.testing.assert_array_equal(got, reference_take(a, idx, axis, mode))
    np.testing.assert_array_equal(invoke("take", [a, np.array([1, 0])]),
                                  np.take(a, [1, 0], axis=0))     # defaults: axis 0, clip


@pytest.mark.parametrize("shape, axis", [((6000, 64), 0), ((3, 6000), 1), ((2, 6000, 3), 1)])
def test_take_large_split_across_threads(shape, axis):
    # Above the parallel threshold the output rows are split across the
    # cores: every row must still come from its index, with req 'add' too.
    a = rng.uniform(-1, 1, shape).astype("float32")
    idx = rng.integers(-50, shape[axis] + 50, 70000).astype("int64")
    for mode in ("wrap", "clip"):
        want = reference_take(a, idx, axis, mode)
        np.testing.assert_array_equal(invoke("take", [a, idx], axis=axis, mode=mode), want)
        out = np.ones_like(want)
        invoke("take", [a, idx], out=out, req="add", axis=axis, mode=mode)
        np.testing.assert_array_equal(out, want + 1)


@pytest.fixture(params=[1, 3])
def threads(request):
    """Kernels split over this many threads whatever the machine's cores
    (3: range boundaries fall inside an outer block of the output)."""
    with kernel_threads(request.param):
        yield request.param


@pytest.mark.parametrize("dtype", ["float64", "float16", "int8"])
@pytest.mark.parametrize("shape, axis", [((5, 7001), 1), ((3, 4999, 16), 1), ((9000, 40), 0)])
def test_take_split_inside_outer_blocks(threads, dtype, shape, axis):
    # Rows of 64 bytes and more are prefetched a few indices ahead, within
    # their outer block; one-element rows are copied without memcpy.  Every
    # row must come from its own index wherever a thread's range starts.
    a = rng.uniform(-100, 100, shape).astype(dtype)
    idx = rng.integers(-shape[axis] - 9, 2 * shape[axis], 30011).astype("int32")
    idx[:20] = idx[0]                                   # duplicates side by side
    for mode in ("wrap", "clip"):
        want = reference_take(a, idx, axis, mode)
        np.testing.assert_array_equal(invoke("take", [a, idx], axis=axis, mode=mode), want)
        out = np.ones_like(want)
        invoke("take", [a, idx], out=out, req="add", axis=axis, mode=mode)
        np.testing.assert_array_equal(out, (want + np.ones_like(want)).astype(dtype))
    ok = np.mod(idx, shape[axis])
    np.testing.assert_array_equal(invoke("take", [a, ok], axis=axis, mode="raise"),
                                  np.take(a, ok, axis=axis))


@settings(max_examples=25, deadline=None)
@given(outer=st.integers(1, 7), n=st.integers(1, 300),
       inner=st.sampled_from([1, 2, 15, 16, 17, 70]), nidx=st.integers(1, 3000),
       threads=st.integers(1, 4), mode=st.sampled_from(["clip", "wrap"]),
       seed=st.integers(0, 2**32 - 1))
def test_take_matches_numpy_on_any_split(outer, n, inner, nidx, threads, mode, seed):
    # Row sizes around a cache line (15-17 float32s), outer blocks that the
    # thread ranges cut anywhere (work above the parallel threshold often).
    r = np.random.default_rng(seed)
    a = r.standard_normal((outer, n, inner)).astype("float32")
    idx = r.integers(-2 * n, 2 * n, nidx)
    with kernel_threads(threads):
        got = invoke("take", [a, idx], axis=1, mode=mode)
    np.testing.assert_array_equal(got, reference_take(a, idx, 1, mode))


def test_take_truncates_float_indices_and_clips_by_default():
    a = np.arange(10, dtype=np.float32) * 10
    idx = np.array([0.9, 1.5, -0.7, -3.2, 8.99, 12.0], np.float32)
    np.testing.assert_array_equal(invoke("take", [a, idx]), [0, 10, 0, 0, 80, 90])
    np.testing.assert_array_equal(invoke("take", [a, idx], mode="wrap"), [0, 10, 0, 70, 80, 20])


def test_take_raise_mode():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(invoke("take", [a, np.array([2, 0])], axis=1, mode="raise"),
                                  a[:, [2, 0]])
    out = np.full((2, 2), 7, np.int32)
    with pytest.raises(MXNetError, match="take: argument 'indices' holds an index out of range"):
        invoke("take", [a, np.array([1, 3])], axis=1, mode="raise", out=out)
    np.testing.assert_array_equal(out, 7)           # nothing written


def test_take_req_and_zero_size():
    a = rng.uniform(0, 1, (4, 3))
    idx = np.array([[3, 0], [1, 1]], np.int64)
    out = np.ones((2, 2, 3))
    invoke("take", [a, idx], out=out, req="add")
    np.testing.assert_allclose(out, a[idx] + 1)
    invoke("take", [a, idx], out=out, req="null")
    np.testing.assert_allclose(out, a[idx] + 1)
    assert invoke("take", [a, np.zeros((0,), np.int32)]).shape == (0, 3)
    assert invoke("take", [np.zeros((0, 3)), np.zeros((0,))], axis=0).shape == (0, 3)
    assert invoke("take", [np.zeros((2, 0)), np.array([1, 0])]).shape == (2, 0)
    np.testing.assert_array_equal(invoke("take", [a, np.array(2)]), a[2])   # 0-d indices


@pytest.mark.parametrize("call, err, text", [
    (lambda: invoke("take", [np.ones((2, 3)), np.ones(2)], axis=2), ShapeError,
     "take: argument 'axis' is 2, out of range for 'a' of shape (2, 3)"),
    (lambda: invoke("take", [np.ones((0, 3)), np.ones(2)]), ShapeError,
     "take: axis 0 of 'a' (0, 3) is empty, so 'indices' of shape (2,) picks nothing"),
    (lambda: invoke("take", [np.ones(3), np.ones(2)], mode="fill"), ParamError,
     "take: argument 'mode' must be one of 'clip', 'wrap', 'raise'"),
])
def test_take_errors(call, err, text):
    with pytest.raises(err) as info:
        call()
    assert text in str(info.value)


def reference_one_hot(idx, depth, on, off, dtype):
    j = np.trunc(idx.astype(np.float64)).astype(np.int64)[..., None]
    return np.where(j == np.arange(depth), on, off).astype(dtype)


@pytest.mark.parametrize("idx_dtype", DTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_one_hot_every_dtype(idx_dtype, dtype):
    for shape in [(), (0,), (6,), (2, 3), (2, 1, 3), (1, 2, 1, 2)]:
        lo = 0 if idx_dtype == "uint8" else -2
        idx = rng.integers(lo, 7, shape).astype(idx_dtype)
        got = invoke("one_hot", [idx], depth=5, on_value=3, off_value=-1 if dtype[0] != "u"
                     else 2, dtype=dtype)
        want = reference_one_hot(idx, 5, 3, -1 if dtype[0] != "u" else 2, dtype)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)


def test_one_hot_defaults_req_and_float_indices():
    idx = np.array([1.7, -0.5, 2.0, 3.2], np.float32)
    got = invoke("one_hot", [idx], depth=3)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 0]])
    out = np.ones((4, 3), np.float32)
    invoke("one_hot", [idx], depth=3, out=out, req="add")
    np.testing.assert_array_equal(out, got + 1)


def test_one_hot_errors():
    for depth in (0, -2):
        with pytest.raises(ShapeError, match=f"one_hot: argument 'depth' must be positive, got "
                                             f"{depth}"):
            invoke("one_hot", [np.ones(3)], depth=depth)
    with pytest.raises(ParamError, match="one_hot: argument 'depth' is required"):
        invoke("one_hot", [np.ones(3)])
