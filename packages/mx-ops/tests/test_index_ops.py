"""_eye, _linspace, diag, _ravel_multi_index, _unravel_index, _histogram,
the contrib index_copy, index_array, quadratic, div_sqrt_dim and allclose,
all_finite and multi_all_finite against NumPy and against what MXNet 1.9.1
computed on their edge cases (data/index_ops_mxnet191.npz, made by
data/make_index_ops_reference.py from data/index_ops_cases.py): every
dtype, every req, gradients by finite differences, and inputs large enough
for the kernels to split across the workers."""
import sys
from pathlib import Path

import numpy as np
import pytest

from mx_engine.base import MXNetError
from mx_ops import infer_shapes, infer_types, invoke
from mx_ops.test_utils import check_numeric_gradient

DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(DATA))
from index_ops_cases import CASES  # noqa: E402

sys.path.remove(str(DATA))
REFERENCE = np.load(DATA / "index_ops_mxnet191.npz")
DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
rng = np.random.default_rng(0)


def _values(shape, dtype):
    if dtype[0] == "f":
        return rng.uniform(-5, 5, size=shape).astype(dtype)
    return rng.integers(0 if dtype == "uint8" else -5, 6, size=shape).astype(dtype)


# --- MXNet 1.9.1's outputs, errors and gradients ------------------------------------

# boolean_mask is not an operator here (mx.nd.contrib's, tests/test_contrib_index.py).
OP_CASES = [c for c in CASES if c[1] != "_contrib_boolean_mask"]


def _input_grads(op, inputs, params, ograd):
    """The gradients MXNet recorded, {input position: array}."""
    if op == "diag":
        return {0: invoke("_backward_diag", [ograd, inputs[0]], **params)}
    if op == "_contrib_quadratic":
        return {0: invoke("_contrib_backward_quadratic", [ograd, inputs[0]], **params)}
    if op == "_contrib_div_sqrt_dim":
        return {0: invoke("_contrib_div_sqrt_dim", [ograd])}
    old_grad, new_grad = invoke("_contrib_backward_index_copy", [ograd, inputs[1]])
    return {0: old_grad, 2: new_grad}


@pytest.mark.parametrize("name, op, inputs, params, ograd", OP_CASES,
                         ids=[c[0] for c in OP_CASES])
def test_matches_mxnet(name, op, inputs, params, ograd):
    if f"{name}.error" in REFERENCE:
        with pytest.raises(MXNetError):
            invoke(op, inputs, **params)
        return
    outs = invoke(op, inputs, **params)
    outs = outs if isinstance(outs, list) else [outs]
    for i, got in enumerate(outs):
        want = REFERENCE[f"{name}.out{i}"]
        assert got.dtype == want.dtype and got.shape == want.shape, (i, got, want)
        np.testing.assert_array_equal(got, want)
    if ograd is not None:
        for i, grad in _input_grads(op, inputs, params, ograd).items():
            np.testing.assert_array_equal(grad, REFERENCE[f"{name}.grad{i}"])


# --- _eye and _linspace -------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, m, k", [(4, 0, 0), (3, 5, 2), (5, 3, -1), (3, 3, 7), (3, 3, -3),
                                     (0, 4, 0), (2, 0, 2**62)])
def test_eye_matches_numpy(dtype, n, m, k):
    want = np.eye(n, m or n, k, dtype=dtype)
    np.testing.assert_array_equal(invoke("_eye", [], N=n, M=m, k=k, dtype=dtype), want)
    out = np.full(want.shape, 2, dtype)
    invoke("_eye", [], out=out, req="add", N=n, M=m, k=k, dtype=dtype)
    np.testing.assert_array_equal(out, want + np.array(2, dtype))
    invoke("_eye", [], out=out, req="null", N=n, M=m, k=k, dtype=dtype)
    np.testing.assert_array_equal(out, want + np.array(2, dtype))


def test_eye_defaults_and_errors():
    assert invoke("_eye", [], N=2).dtype == np.float32
    assert invoke("_eye", [], N="3", M="2", k="-1", ctx="cpu(0)").shape == (3, 2)
    with pytest.raises(MXNetError, match="_eye: arguments 'N' and 'M' must be non-negative"):
        invoke("_eye", [], N=-1)
    with pytest.raises(MXNetError, match="_eye: argument 'N' is required"):
        invoke("_eye", [])


def test_eye_large_rows_split_across_workers():
    got = invoke("_eye", [], N=700, M=600, k=-3, dtype="float64")
    np.testing.assert_array_equal(got, np.eye(700, 600, -3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start, stop, num, endpoint", [
    (0, 1, 5, True), (0, 1, 5, False), (-2.5, 7.25, 40, True), (3, -3, 7, False),
    (1, 2, 1, True), (1, 2, 0, False), (0, 100, 300001, True)])
def test_linspace_matches_numpy(dtype, start, stop, num, endpoint):
    # NumPy's values in float64, then C-cast (truncation) as MXNet does.
    want = np.linspace(start, stop, num, endpoint=endpoint)
    if dtype[0] != "f":
        want = np.trunc(want)
    want = want.astype(dtype)
    got = invoke("_linspace", [], start=start, stop=stop, num=num, endpoint=endpoint,
                 dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (num,)
    if dtype == "float64" and endpoint and num > 1:
        # NumPy pins the last value to stop; start + (num - 1) * step may
        # differ from it in the last bit.
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-13)
    else:
        np.testing.assert_array_equal(got, want)
    out = np.ones(num, dtype)
    invoke("_linspace", [], out=out, req="add", start=start, stop=stop, num=num,
           endpoint=endpoint, dtype=dtype)
    np.testing.assert_array_equal(out, got + np.array(1, dtype))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_linspace_blocks_and_thread_splits_give_start_plus_i_step(threads, dtype):
    # The kernel counts the index in double blocks of 8 (init_cpu.h
    # range_fill): every split and tail gives start + i * step in float64
    # (NumPy's separate multiply and add), then cast, bit for bit.
    from mx_ops.test_utils import kernel_threads
    for num in (0, 1, 7, 8, 9, 17, 262147):
        step = (5.5 - -3.25) / (num - 1) if num > 1 else 0.0
        exact = -3.25 + np.arange(num, dtype=np.float64) * step
        if dtype[0] != "f":
            exact = np.trunc(exact)
        with kernel_threads(threads):
            got = invoke("_linspace", [], start=-3.25, stop=5.5, num=num, dtype=dtype)
            ranged = invoke("_arange", [], start=-3.25, stop=-3.25 + min(max(num, 1), 4099) * 0.375,
                            step=0.375, dtype=dtype)
        np.testing.assert_array_equal(got, exact.astype(dtype))
        want = -3.25 + np.arange(ranged.size, dtype=np.float64) * 0.375
        np.testing.assert_array_equal(ranged, (want if dtype[0] == "f"
                                               else np.trunc(want)).astype(dtype))


def test_linspace_errors():
    with pytest.raises(MXNetError, match="_linspace: argument 'num' must be non-negative"):
        invoke("_linspace", [], start=0, stop=1, num=-1)
    with pytest.raises(MXNetError, match="_linspace: argument 'stop' is required"):
        invoke("_linspace", [], start=0, num=3)


# --- diag ---------------------------------------------------------------------------

def _numpy_diag(x, k, axis1, axis2):
    if x.ndim == 1:
        return np.diag(x, k)
    return np.diagonal(x, k, axis1, axis2)


DIAG_CASES = [((5,), 0, 0, 1), ((4,), -2, 0, 1), ((3, 5), 1, 0, 1), ((5, 3), -2, 1, 0),
              ((2, 3, 4), 2, 2, 0), ((2, 3, 4, 5), -1, -1, 1), ((3, 4), 4, 0, 1),
              ((0, 4), 0, 0, 1), ((0,), 1, 0, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, k, axis1, axis2", DIAG_CASES)
def test_diag_matches_numpy(dtype, shape, k, axis1, axis2):
    x = _values(shape, dtype)
    want = _numpy_diag(x, k, axis1, axis2)
    params = dict(k=k, axis1=axis1, axis2=axis2)
    got = invoke("diag", [x], **params)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)
    out = _values(want.shape, dtype)
    base = out.copy()
    invoke("diag", [x], out=out, req="add", **params)
    np.testing.assert_array_equal(out, base + want)
    # The backward puts a gradient back where diag took it from.
    g = _values(want.shape, dtype)
    grad = invoke("_backward_diag", [g, x], **params)
    if x.ndim == 1:
        np.testing.assert_array_equal(grad, _numpy_diag(g, k, 0, 1))
    else:
        np.testing.assert_array_equal(_numpy_diag(grad, k, axis1, axis2), g)
        assert grad.sum(dtype="float64") == g.sum(dtype="float64")
    out = _values(shape, dtype)
    base = out.copy()
    invoke("_backward_diag", [g, x], out=out, req="add", **params)
    np.testing.assert_array_equal(out, base + grad)


@pytest.mark.parametrize("shape, k, axis1, axis2", [((4,), 1, 0, 1), ((3, 4), -1, 0, 1),
                                                    ((2, 3, 4), 1, 2, 1)])
def test_diag_gradient(shape, k, axis1, axis2):
    x = rng.uniform(-1, 1, size=shape)
    check_numeric_gradient("diag", [x], k=k, axis1=axis1, axis2=axis2)
    out = _numpy_diag(x, k, axis1, axis2)
    check_numeric_gradient("_backward_diag", [rng.uniform(-1, 1, out.shape), x],
                           check_inputs=(0,), k=k, axis1=axis1, axis2=axis2)


def test_diag_large_split_across_workers():
    x = rng.uniform(size=(300, 40, 500)).astype("float32")
    np.testing.assert_array_equal(invoke("diag", [x], k=3, axis1=2, axis2=0),
                                  np.diagonal(x, 3, 2, 0))
    v = rng.uniform(size=(1000,)).astype("float32")
    np.testing.assert_array_equal(invoke("diag", [v], k=-5), np.diag(v, -5))


def test_diag_errors():
    with pytest.raises(MXNetError, match="diag: diagonal k=3 does not exist"):
        invoke("diag", [np.ones((2, 2))], k=3)
    with pytest.raises(MXNetError, match="refer to the same axis 1"):
        invoke("diag", [np.ones((2, 2, 2))], axis1=1, axis2=-2)
    with pytest.raises(MXNetError, match="argument 'axis2' is 2, out of range"):
        invoke("diag", [np.ones((2, 2))], axis2=2)
    with pytest.raises(MXNetError, match="at least one axis"):
        invoke("diag", [np.ones(())])
    assert infer_shapes("diag", {"k": 1, "axis1": 0, "axis2": 2}, [(3, 4, 5)]) == (
        [(3, 4, 5)], [(4, 3)])


# --- _ravel_multi_index and _unravel_index ---------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shape", [(7, 6), (3, 4, 5), (11,), (2, 3, 2, 3, 2)])
def test_ravel_and_unravel_match_numpy(dtype, shape):
    flat = rng.integers(0, np.prod(shape), size=(4, 5))
    multi = np.array(np.unravel_index(flat, shape))
    got = invoke("_ravel_multi_index", [multi.astype(dtype)], shape=shape)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, flat)
    back = invoke("_unravel_index", [flat.astype(dtype)], shape=shape)
    assert back.dtype == np.dtype(dtype) and back.shape == (len(shape), 4, 5)
    np.testing.assert_array_equal(back, multi)
    # The aliases and a -1 first dimension (never read).
    np.testing.assert_array_equal(
        invoke("ravel_multi_index", [multi.astype(dtype)], shape=(-1,) + shape[1:]), flat)
    np.testing.assert_array_equal(
        invoke("unravel_index", [flat.astype(dtype)], shape=(-1,) + shape[1:]), multi)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ravel_unravel_reqs(dtype):
    multi = np.array([[1, 0, 2], [3, 1, 0]], dtype)
    out = np.ones(3, dtype)
    invoke("_ravel_multi_index", [multi], out=out, req="add", shape=(3, 4))
    np.testing.assert_array_equal(out, np.array([8, 2, 9], dtype))
    invoke("_ravel_multi_index", [multi], out=out, req="null", shape=(3, 4))
    np.testing.assert_array_equal(out, np.array([8, 2, 9], dtype))
    out = np.ones((2, 3), dtype)
    invoke("_unravel_index", [np.array([7, 2, 11], dtype)], out=out, req="add", shape=(3, 4))
    np.testing.assert_array_equal(out, np.array([[2, 1, 3], [4, 3, 4]], dtype))


def test_ravel_unravel_large_split_across_workers():
    shape = (50, 60, 70)
    flat = rng.integers(0, 50 * 60 * 70, size=400000)
    multi = np.array(np.unravel_index(flat, shape), dtype="int64")
    np.testing.assert_array_equal(invoke("_ravel_multi_index", [multi], shape=shape), flat)
    np.testing.assert_array_equal(invoke("_unravel_index", [flat], shape=shape), multi)


def test_ravel_unravel_errors_and_gradient():
    with pytest.raises(MXNetError, match="first dimension of 'data' \\(3, 2\\)"):
        invoke("_ravel_multi_index", [np.ones((3, 2))], shape=(4, 4))
    with pytest.raises(MXNetError, match="must be positive"):
        invoke("_unravel_index", [np.ones(3)], shape=(4, 0))
    with pytest.raises(MXNetError, match="at least one dimension"):
        invoke("_unravel_index", [np.ones(3)])
    assert infer_types("_unravel_index", {"shape": (2, 3)}, ["int32"]) == (
        ["int32"], ["int32"])
    # Piecewise constant: MXNet's gradient is zero.
    check_numeric_gradient("_ravel_multi_index", [np.array([[1.5, 0.5], [2.5, 1.5]])],
                           shape=(3, 4))


# --- _histogram ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bins, rng_", [(10, (-2.0, 3.0)), (1, (0.0, 1.0)), (37, (-5, 5))])
def test_histogram_matches_numpy(dtype, bins, rng_):
    x = np.concatenate([rng.normal(size=5000), [np.nan, np.inf, rng_[1]]]).astype(dtype)
    counts, edges = invoke("_histogram", [x], bin_cnt=bins, range=rng_)
    want_counts, want_edges = np.histogram(x[np.isfinite(x)], bins=bins, range=rng_)
    assert counts.dtype == np.int64 and edges.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_allclose(edges, want_edges.astype(dtype), rtol=1e-6)
    given = np.sort(rng.uniform(-3, 3, size=bins + 1)).astype(dtype)
    counts, edges = invoke("_histogram", [x, given])
    np.testing.assert_array_equal(counts, np.histogram(x[np.isfinite(x)], bins=given)[0])
    np.testing.assert_array_equal(edges, given)


@pytest.mark.parametrize("dtype", DTYPES)
def test_histogram_reqs(dtype):
    x = np.array([0, 1, 1, 2, 3], dtype)
    counts, edges = np.full(2, 5, "int64"), np.ones(3, dtype)
    invoke("_histogram", [x], out=[counts, edges], req=["add", "add"], bin_cnt=2, range=(0, 4))
    np.testing.assert_array_equal(counts, [8, 7])
    np.testing.assert_array_equal(edges, np.array([1, 3, 5], dtype))
    invoke("_histogram", [x], out=[counts, edges], req=["write", "null"], bin_cnt=2,
           range=(0, 4))
    np.testing.assert_array_equal(counts, [3, 2])
    np.testing.assert_array_equal(edges, np.array([1, 3, 5], dtype))


def test_histogram_large_split_across_workers():
    x = rng.normal(size=1 << 20).astype("float32")
    counts, _ = invoke("_histogram", [x], bin_cnt=64, range=(-3, 3))
    np.testing.assert_array_equal(counts, np.histogram(x, bins=64, range=(-3, 3))[0])
    edges = np.linspace(-2, 2, 200).astype("float32")
    counts, _ = invoke("_histogram", [x, edges])
    np.testing.assert_array_equal(counts, np.histogram(x, bins=edges)[0])


def test_histogram_inference_and_errors():
    assert infer_shapes("_histogram", {"bin_cnt": 5, "range": (0.0, 1.0)}, [(7, 3)]) == (
        [(7, 3)], [(5,), (6,)])
    assert infer_shapes("_histogram", {}, [(7,), (4,)]) == ([(7,), (4,)], [(3,), (4,)])
    assert infer_types("_histogram", {}, ["float16", "float16"])[1] == ["int64", "float16"]
    with pytest.raises(MXNetError, match="'bins' has dtype float32; it must have the dtype"):
        invoke("_histogram", [np.ones(3), np.array([0, 1], "float32")])
    with pytest.raises(MXNetError, match="argument 'range' must be \\(lo, hi\\)"):
        invoke("_histogram", [np.ones(3)], bin_cnt=3)
    with pytest.raises(MXNetError, match="must not exceed the second"):
        invoke("_histogram", [np.ones(3)], bin_cnt=3, range=(2, 1))
    with pytest.raises(MXNetError, match="'bin_cnt' must be in"):
        invoke("_histogram", [np.ones(3)], bin_cnt=0, range=(0, 1))


# --- _contrib_index_copy and _contrib_index_array ----------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idx_dtype", ["int64", "float32", "uint8"])
def test_index_copy_matches_numpy(dtype, idx_dtype):
    old, new = _values((6, 2, 3), dtype), _values((4, 2, 3), dtype)
    idx = np.array([5, 0, 3, 0], idx_dtype)
    want = old.copy()
    want[idx.astype("int64")] = new            # NumPy's repeated index: the last wins
    np.testing.assert_array_equal(invoke("_contrib_index_copy", [old, idx, new]), want)
    out = _values(old.shape, dtype)
    base = out.copy()
    invoke("_contrib_index_copy", [old, idx, new], out=out, req="add")
    np.testing.assert_array_equal(out, base + want)
    g = _values(old.shape, dtype)
    g_old, g_new = invoke("_contrib_backward_index_copy", [g, idx])
    kept = g.copy()
    kept[idx.astype("int64")] = 0
    np.testing.assert_array_equal(g_old, kept)
    np.testing.assert_array_equal(g_new, g[idx.astype("int64")])


def test_index_copy_gradient_and_errors():
    old, new = rng.uniform(size=(5, 3)), rng.uniform(size=(2, 3))
    check_numeric_gradient("_contrib_index_copy", [old, np.array([3.0, 1.0]), new],
                           check_inputs=(0, 2))
    with pytest.raises(MXNetError, match="index out of range of the rows"):
        invoke("_contrib_index_copy", [old, np.array([5, 1]), new])
    with pytest.raises(MXNetError, match="index out of range of the rows"):
        invoke("_contrib_index_copy", [old, np.array([-1, 1]), new])
    with pytest.raises(MXNetError, match="a 'new_tensor' of shape"):
        invoke("_contrib_index_copy", [old, np.array([0]), new])
    big_old, big_new = rng.uniform(size=(4000, 100)), rng.uniform(size=(1500, 100))
    idx = rng.permutation(4000)[:1500]
    want = big_old.copy()
    want[idx] = big_new
    np.testing.assert_array_equal(invoke("_contrib_index_copy", [big_old, idx, big_new]), want)


@pytest.mark.parametrize("shape, axes", [((2, 3), None), ((2, 3, 4), (-1, 0)), ((5,), (0,)),
                                         ((2, 0, 3), None), ((3, 2), (1, 1)),
                                         ((60, 70, 80), (1, 2))])
def test_index_array_matches_numpy(shape, axes):
    x = np.zeros(shape, "float16")
    grid = np.indices(shape, dtype="int64")
    picked = range(len(shape)) if axes is None else [a % len(shape) for a in axes]
    want = np.stack([grid[a] for a in picked], axis=-1)
    params = {} if axes is None else {"axes": axes}
    got = invoke("_contrib_index_array", [x], **params)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    out = np.ones(want.shape, "int64")
    invoke("_contrib_index_array", [x], out=out, req="add", **params)
    np.testing.assert_array_equal(out, want + 1)
    with pytest.raises(MXNetError, match="'axes' holds 3, out of range"):
        invoke("_contrib_index_array", [x], axes=(3,))


# --- contrib quadratic, div_sqrt_dim, allclose; all_finite, multi_all_finite --------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_quadratic_and_div_sqrt_dim_match_numpy(dtype):
    x = _values((3, 4), dtype)
    calc = np.float64 if dtype == "float64" else np.float32
    a, b, c = (calc(np.float32(v)) for v in (0.5, -2.0, 1.25))
    v = x.astype(calc)
    want = v * (a * v + b) + c
    want = (np.trunc(want) if dtype[0] != "f" else want).astype(dtype)
    got = invoke("_contrib_quadratic", [x], a=0.5, b=-2.0, c=1.25)
    np.testing.assert_array_equal(got, want)
    out = _values(x.shape, dtype)
    base = out.copy()
    invoke("_contrib_quadratic", [x], out=out, req="add", a=0.5, b=-2.0, c=1.25)
    np.testing.assert_array_equal(out, base + want)
    root = np.sqrt(calc(4)).astype(dtype)
    want = (np.trunc(x / root) if dtype[0] != "f" else x / root).astype(dtype)
    np.testing.assert_array_equal(invoke("_contrib_div_sqrt_dim", [x]), want)


def test_quadratic_and_div_sqrt_dim_gradients():
    x = rng.uniform(-1, 1, size=(3, 5))
    check_numeric_gradient("_contrib_quadratic", [x], a=1.5, b=-0.5, c=2.0)
    check_numeric_gradient("_contrib_div_sqrt_dim", [x])


def test_elementwise_large_split_across_workers():
    x = rng.uniform(-1, 1, size=(1000, 300)).astype("float32")
    want = x * (np.float32(2) * x + np.float32(3)) + np.float32(1)
    np.testing.assert_allclose(invoke("_contrib_quadratic", [x], a=2, b=3, c=1), want,
                               rtol=1e-6)
    np.testing.assert_array_equal(invoke("_contrib_div_sqrt_dim", [x]),
                                  x / np.sqrt(np.float32(300)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_allclose_matches_numpy(dtype):
    a = _values((4, 5), dtype)
    b = a.copy()
    assert invoke("_contrib_allclose", [a, b]).tolist() == 1
    b.flat[7] += np.array(1, dtype)
    got = invoke("_contrib_allclose", [a, b])
    assert got.dtype == np.uint8 and got.shape == ()
    assert got.tolist() == int(np.allclose(a.astype("float64"), b.astype("float64")))
    assert invoke("_contrib_allclose", [a, b], atol=1.5).tolist() == 1
    out = np.array(3, np.uint8)
    invoke("_contrib_allclose", [a, a], out=out, req="add")
    assert out.tolist() == 4


def test_allclose_large_and_errors():
    a = rng.uniform(size=1 << 20).astype("float32")
    b = a.copy()
    assert invoke("_contrib_allclose", [a, b]).tolist() == 1
    b[-1] = np.nan
    assert invoke("_contrib_allclose", [a, b]).tolist() == 0
    with pytest.raises(MXNetError, match="argument 'b' has shape \\(2,\\)"):
        invoke("_contrib_allclose", [np.ones((1, 2)), np.ones(2)])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_all_finite(dtype):
    x = np.ones(1 << 20, dtype)
    assert invoke("all_finite", [x]).tolist() == [1.0]
    for bad in (np.inf, -np.inf, np.nan):
        y = x.copy()
        y[-3] = bad
        assert invoke("all_finite", [y]).tolist() == [0.0]
        assert invoke("multi_all_finite", [x, y], num_arrays=2).tolist() == [0.0]
    assert invoke("multi_all_finite", [x, x, x]).tolist() == [1.0]
    # Without init_output the output is only ever set to 0 (AMP accumulates).
    out = np.array([5.0], np.float32)
    invoke("all_finite", [x], out=out, init_output=False)
    assert out.tolist() == [5.0]
    invoke("multi_all_finite", [x, y], out=out, init_output=False, num_arrays=2)
    assert out.tolist() == [0.0]
    out = np.array([2.0], np.float32)
    invoke("all_finite", [x], out=out, req="add")
    assert out.tolist() == [3.0]


def test_all_finite_types():
    with pytest.raises(MXNetError, match="only floating point types are supported"):
        invoke("all_finite", [np.ones(3, "int32")])
    with pytest.raises(MXNetError, match="all must have one dtype"):
        invoke("multi_all_finite", [np.ones(3), np.ones(3, "float32")])
    assert infer_types("all_finite", {"init_output": True}, ["float16"])[1] == ["float32"]
    assert infer_shapes("multi_all_finite", {"num_arrays": 2, "init_output": True},
                        [(2, 3), (4,)])[1] == [(1,)]


def test_partial_type_inference():
    """Graphs with unknown dtypes: the fixed output dtypes are not taken for
    the inputs', and inputs of one dtype share what is known."""
    hist = {"bin_cnt": None, "range": None}
    assert infer_types("_histogram", hist, [None, None], [None, "float64"]) == (
        ["float64", "float64"], ["int64", "float64"])
    assert infer_types("_histogram", {"bin_cnt": 3, "range": (0.0, 1.0)}, [None],
                       ["int64", "float16"]) == (["float16"], ["int64", "float16"])
    assert infer_types("_contrib_allclose", {}, [None, "float16"]) == (
        ["float16", "float16"], ["uint8"])
    assert infer_types("multi_all_finite", {"num_arrays": 2, "init_output": True},
                       [None, "float64"]) == (["float64", "float64"], ["float32"])
    assert infer_types("_contrib_index_array", {"axes": None}, [None]) == ([None], ["int64"])
    assert infer_types("_contrib_backward_index_copy", {}, [None, "int64"],
                       [None, "float16"]) == (["float16", "int64"], ["float16", "float16"])
