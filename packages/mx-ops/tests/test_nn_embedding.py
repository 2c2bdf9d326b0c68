"""Embedding and _backward_Embedding against NumPy references: every index
and weight dtype, MXNet's clipping of out-of-range indices, every req, the
weight gradient's sums (deterministic, independent of the thread count)
and central finite differences through the gradient maker."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

ALL = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
FLOATS = ["float16", "float32", "float64"]


def rows(idx, input_dim):
    """MXNet's reading of an index: C cast (truncation), clipped."""
    return np.clip(np.trunc(np.asarray(idx, np.float64)), 0, input_dim - 1).astype(np.int64)


def indices(rng, shape, input_dim, dtype):
    """Indices in and out of range (negative ones for signed dtypes)."""
    low = 0 if dtype == "uint8" else -3
    v = rng.integers(low, input_dim + 3, size=shape)
    if dtype.startswith("float"):
        v = v + rng.uniform(0, 0.9, size=shape)       # truncation toward zero
    return v.astype(dtype)


@pytest.mark.parametrize("wtype", ALL)
@pytest.mark.parametrize("itype", ALL)
def test_forward_every_dtype(itype, wtype):
    rng = np.random.default_rng(ALL.index(itype) * 7 + ALL.index(wtype))
    idx = indices(rng, (3, 4), 6, itype)
    w = rng.integers(-5, 6, size=(6, 5)).astype(wtype)
    params = dict(input_dim=6, output_dim=5, dtype=wtype)
    out = invoke("Embedding", [idx, w], **params)
    assert out.dtype == w.dtype and out.shape == (3, 4, 5)
    np.testing.assert_array_equal(out, w[rows(idx, 6)])
    acc = np.ones_like(out)
    invoke("Embedding", [idx, w], out=acc, req="add", **params)
    np.testing.assert_array_equal(acc, (w[rows(idx, 6)] + np.ones_like(out)).astype(wtype))
    keep = np.full_like(out, 3)
    invoke("Embedding", [idx, w], out=keep, req="null", **params)
    assert np.all(keep == 3)


def test_clipping_and_truncation():
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([-7.0, -0.5, 0.9, 2.99, 3.0, 3.5, 100.0], np.float32)
    out = invoke("Embedding", [idx, w], input_dim=4, output_dim=3)
    np.testing.assert_array_equal(out, w[[0, 0, 0, 2, 3, 3, 3]])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), ()])
def test_backward_sums_rows(nn, dtype, shape):
    rng = np.random.default_rng(len(shape))
    idx = indices(rng, shape, 5, dtype)
    params = dict(input_dim=5, output_dim=4, dtype=dtype)
    og = rng.standard_normal(shape + (4,)).astype(dtype)
    want = np.zeros((5, 4))
    np.add.at(want, rows(idx, 5).reshape(-1), og.astype(np.float64).reshape(-1, 4))
    nn.check_reqs("_backward_Embedding", [og, idx], [np.zeros(shape), want], params, dtype)


@pytest.mark.parametrize("itype", ["int32", "uint8", "int64", "float16"])
def test_backward_index_dtypes_and_zero_data_grad(itype):
    rng = np.random.default_rng(1)
    idx = indices(rng, (7,), 4, itype)
    og = rng.standard_normal((7, 3))
    params = dict(input_dim=4, output_dim=3, dtype="float64")
    dx, dw = invoke("_backward_Embedding", [og, idx], **params)
    assert dx.dtype == idx.dtype and not dx.any()
    want = np.zeros((4, 3))
    np.add.at(want, rows(idx, 4), og)
    np.testing.assert_allclose(dw, want, rtol=1e-12)
    # req add leaves the index gradient alone and accumulates the weight's
    dx, dw2 = np.full(7, 9, itype), np.ones((4, 3))
    invoke("_backward_Embedding", [og, idx], out=[dx, dw2], req="add", **params)
    assert np.all(dx == 9)
    np.testing.assert_allclose(dw2, want + 1, rtol=1e-12)


def test_backward_is_deterministic_for_many_duplicates():
    """Large enough to split across cores: every run gives the same bits,
    equal to sums in position order."""
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 3, size=60000).astype(np.int32)
    og = rng.standard_normal((60000, 8)).astype(np.float32)
    params = dict(input_dim=3, output_dim=8)
    first = invoke("_backward_Embedding", [og, idx], **params)[1]
    for _ in range(3):
        np.testing.assert_array_equal(invoke("_backward_Embedding", [og, idx], **params)[1],
                                      first)
    want = np.stack([np.cumsum(og[idx == r], axis=0, dtype=np.float32)[-1] for r in range(3)])
    np.testing.assert_array_equal(first, want)


def test_numeric_gradient():
    rng = np.random.default_rng(3)
    # indices away from integers, so the nudges of finite differences never
    # change the row they pick (their gradient is 0 both ways)
    idx = rng.integers(0, 6, size=(3, 4)) + 0.5
    w = rng.standard_normal((6, 3))
    check_numeric_gradient("Embedding", [idx, w], input_dim=6, output_dim=3,
                           dtype="float64")


def test_errors():
    idx, w = np.zeros((2, 3), np.int32), np.zeros((6, 4), np.float32)
    with pytest.raises(ShapeError, match=r"Embedding: argument 'weight' has shape \(6, 4\), "
                                         r"expected \(5, 4\) \(input_dim, output_dim\)"):
        invoke("Embedding", [idx, w], input_dim=5, output_dim=4)
    # sparse_grad changes only the gradient's storage: the forward is the same
    np.testing.assert_array_equal(
        invoke("Embedding", [idx, w], input_dim=6, output_dim=4, sparse_grad=True),
        invoke("Embedding", [idx, w], input_dim=6, output_dim=4))
    with pytest.raises(TypeInferenceError, match="Embedding: argument 'weight' has dtype "
                                                 "float32, but argument 'dtype' is float64"):
        invoke("Embedding", [idx, w], input_dim=6, output_dim=4, dtype="float64")
    with pytest.raises(ParamError, match="Embedding: argument 'input_dim' is required"):
        invoke("Embedding", [idx, w], output_dim=4)
    with pytest.raises(ParamError, match="'output_dim' must be in"):
        invoke("Embedding", [idx, w], input_dim=6, output_dim=0)
    with pytest.raises(TypeInferenceError, match="argument 'data' has dtype bool"):
        invoke("Embedding", [np.zeros(3, bool), w], input_dim=6, output_dim=4)
    with pytest.raises(ShapeError, match=r"_backward_Embedding: argument 'out_grad' has shape "
                                         r"\(2, 3, 5\), expected \(2, 3, 4\)"):
        invoke("_backward_Embedding", [np.zeros((2, 3, 5), np.float32), idx], input_dim=6,
               output_dim=4)
    with pytest.raises(TypeInferenceError, match="needs a float dtype"):
        invoke("_backward_Embedding", [np.zeros((2, 3, 4), np.int32), idx], input_dim=6,
               output_dim=4, dtype="int32")


def test_mxnet_string_params():
    p = get("Embedding").parse_params({"input_dim": "10", "output_dim": "3",
                                       "dtype": "float16", "sparse_grad": "False"})
    assert p == {"input_dim": 10, "output_dim": 3, "dtype": "float16", "sparse_grad": False}
