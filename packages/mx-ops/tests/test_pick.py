"""pick (choose_element_0index), batch_take and fill_element_0index against
NumPy and MXNet 1.9.1's outputs: every axis, keepdims, mode, dtype of data
and index, req; pick's gradient against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_ops import invoke, registry
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient, kernel_threads

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
rng = np.random.default_rng(5)


def infer_shapes(op, params, shapes):
    return registry.get(op).infer_shape(registry.get(op).parse_params(params), shapes)


def reference_pick(x, idx, axis, mode, keepdims):
    n = x.shape[axis]
    j = np.trunc(idx.astype(np.float64)).astype(np.int64)
    j = np.mod(j, n) if mode == "wrap" else np.clip(j, 0, n - 1)
    j = np.expand_dims(j.reshape(np.delete(x.shape, axis)), axis)
    out = np.take_along_axis(x, j, axis=axis)
    return out if keepdims else np.squeeze(out, axis)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pick_every_axis_mode_and_index_dtype(dtype):
    x = rng.uniform(0, 100, (3, 4, 5)).astype(dtype)
    for axis in range(-3, 3):
        n = x.shape[axis]
        for idx_dtype in DTYPES:
            lo = 0 if idx_dtype == "uint8" else -2 * n
            idx = rng.integers(lo, 2 * n, np.delete(x.shape, axis)).astype(idx_dtype)
            for mode in ("clip", "wrap"):
                for keepdims in (False, True):
                    ix = np.expand_dims(idx, axis) if keepdims else idx
                    got = invoke("pick", [x, ix], axis=axis, mode=mode, keepdims=keepdims)
                    np.testing.assert_array_equal(
                        got, reference_pick(x, idx, axis, mode, keepdims))


def test_mxnet_outputs_and_alias():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([0, 5, -1], np.float32)
    np.testing.assert_array_equal(invoke("pick", [x, i]), [0, 7, 8])
    np.testing.assert_array_equal(invoke("pick", [x, i], mode="wrap"), [0, 5, 11])
    np.testing.assert_array_equal(
        invoke("pick", [x, np.array([1, 2, 0, 1], np.float32)], axis=0, keepdims=True),
        [[4, 9, 2, 7]])
    np.testing.assert_array_equal(invoke("choose_element_0index", [x, i]), [0, 7, 8])
    np.testing.assert_array_equal(invoke("batch_take", [x, i.astype("int32")]), [0, 7, 8])
    np.testing.assert_array_equal(
        invoke("fill_element_0index", [x, np.array([-1, -2, -3], np.float32), i]),
        [[-1, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])
    np.testing.assert_array_equal(
        invoke("fill_element_0index", [x, np.array([-1, -2, -3], np.float32),
                                       np.array([3.7, -1.5, 1], np.float32)]),
        [[0, 1, 2, -1], [4, 5, 6, 7], [8, -3, 10, 11]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_take_and_fill_every_dtype(dtype):
    a = rng.uniform(0, 100, (2, 3, 6)).astype(dtype)
    idx = rng.integers(-3, 9, (2, 3)).astype("int32")
    np.testing.assert_array_equal(invoke("batch_take", [a, idx]),
                                  np.take_along_axis(a, np.clip(idx, 0, 5)[..., None], -1)[..., 0])
    lhs = a.reshape(6, 6)
    mhs = rng.uniform(0, 100, 6).astype(dtype)
    want = lhs.copy()
    for r, j in enumerate(idx.reshape(-1)):
        if 0 <= j < 6:
            want[r, j] = mhs[r]
    np.testing.assert_array_equal(invoke("fill_element_0index", [lhs, mhs, idx.reshape(-1)]),
                                  want)


def test_req_add_and_empty():
    x = rng.uniform(size=(4, 5))
    idx = np.array([4, 0, 2, 2])
    out = np.ones(4)
    invoke("pick", [x, idx], out=out, req="add")
    np.testing.assert_allclose(out, x[np.arange(4), idx] + 1)
    assert invoke("pick", [np.zeros((0, 3)), np.zeros((0,))]).shape == (0,)
    g = np.ones((4, 5))
    invoke("_backward_pick", [np.full(4, 2.0), idx, x], out=g, req="add")
    want = np.ones((4, 5))
    want[np.arange(4), idx] += 2
    np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
@pytest.mark.parametrize("shape, axis", [((20011, 50), -1), ((4, 30, 5003), 1),
                                         ((50, 20011), 0)])
def test_pick_large_split_across_threads(threads, dtype, shape, axis):
    # Each pick from a row longer than a cache line counts as a line's worth
    # of work, so these split across the threads, with range boundaries
    # inside an outer block (3 threads); every element must still be its own.
    x = rng.uniform(-100, 100, shape).astype(dtype)
    n = x.shape[axis]
    idx = rng.integers(-n, 2 * n, np.delete(x.shape, axis)).astype("int64")
    with kernel_threads(threads):
        for mode in ("clip", "wrap"):
            want = reference_pick(x, idx, axis, mode, False)
            np.testing.assert_array_equal(invoke("pick", [x, idx], axis=axis, mode=mode), want)
            out = np.full_like(want, 3)
            invoke("pick", [x, idx], out=out, req="add", axis=axis, mode=mode)
            np.testing.assert_array_equal(out, (want + np.full_like(want, 3)).astype(dtype))


@settings(max_examples=25, deadline=None)
@given(outer=st.integers(1, 300), n=st.integers(1, 40), inner=st.integers(1, 200),
       threads=st.integers(1, 4), mode=st.sampled_from(["clip", "wrap"]),
       seed=st.integers(0, 2**32 - 1))
def test_pick_matches_numpy_on_any_split(outer, n, inner, threads, mode, seed):
    r = np.random.default_rng(seed)
    x = r.standard_normal((outer, n, inner)).astype("float32")
    idx = r.integers(-2 * n, 2 * n, (outer, inner))
    with kernel_threads(threads):
        got = invoke("pick", [x, idx], axis=1, mode=mode)
    np.testing.assert_array_equal(got, reference_pick(x, idx, 1, mode, False))


@pytest.mark.parametrize("params", [{}, {"axis": 0}, {"axis": 1, "keepdims": True},
                                    {"axis": -1, "mode": "wrap"}])
def test_pick_gradient(params):
    x = rng.uniform(size=(3, 4))
    axis = params.get("axis", -1)
    n = x.shape[axis]
    idx = rng.integers(-n, 2 * n, np.delete(x.shape, axis)).astype("float64")
    if params.get("keepdims"):
        idx = np.expand_dims(idx, axis)
    check_numeric_gradient("pick", [x, idx], check_inputs=(0,), **params)


def test_errors():
    with pytest.raises(ShapeError, match="axis=None"):
        infer_shapes("pick", {"axis": None}, [(3, 4), (3,)])
    with pytest.raises(ShapeError, match="'index' has shape"):
        infer_shapes("pick", {}, [(3, 4), (4,)])
    with pytest.raises(TypeInferenceError, match="int32"):
        invoke("batch_take", [np.zeros((3, 4)), np.zeros(3, "float32")])
    with pytest.raises(ShapeError, match="one index per row"):
        infer_shapes("batch_take", {}, [(2, 3, 4), (2,)])
