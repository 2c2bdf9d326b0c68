"""hard_sigmoid and SVMOutput (with their _backward_* operators) against
NumPy, MXNet 1.9.1's outputs and gradients (tests/data/norm_mxnet191.npz),
finite differences (hard_sigmoid), every req, inference and errors."""
from pathlib import Path

import numpy as np
import pytest

from mx_ops import get, infer_shapes, infer_types, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DATA = np.load(Path(__file__).parent / "data" / "norm_mxnet191.npz")
TOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}


def _f32(v):
    return float(np.float32(v))         # MXNet's float32 parameter fields


def hard_sigmoid_ref(x, alpha=0.2, beta=0.5):
    z = x.astype(np.float64) * _f32(alpha) + _f32(beta)
    return np.clip(z, 0, 1), (z > 0) & (z < 1)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_hard_sigmoid_against_numpy(nn, dtype):
    x = np.random.default_rng(0).uniform(-5, 5, (7, 9)).astype(dtype)
    y, inside = hard_sigmoid_ref(x)
    got = invoke("hard_sigmoid", [x])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), y, rtol=TOL[dtype], atol=TOL[dtype])
    og = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    dx = invoke("_backward_hard_sigmoid", [og, x])
    np.testing.assert_allclose(dx.astype(np.float64), np.where(inside, og * _f32(0.2), 0),
                               rtol=TOL[dtype], atol=TOL[dtype])
    if dtype != "float16":
        nn.check_reqs("hard_sigmoid", [x], [y], {}, dtype)
        nn.check_reqs("_backward_hard_sigmoid", [og, x], [np.where(inside, og * _f32(0.2), 0)],
                      {}, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hard_sigmoid_against_mxnet(dtype):
    c = {f: DATA[f"hard_sigmoid.{dtype}.{f}"] for f in ("x", "y", "og", "dx")}
    np.testing.assert_array_equal(invoke("hard_sigmoid", [c["x"]], alpha=0.3, beta=0.4), c["y"])
    np.testing.assert_array_equal(
        invoke("_backward_hard_sigmoid", [c["og"], c["x"]], alpha=0.3, beta=0.4), c["dx"])


def test_hard_sigmoid_numeric_gradient():
    # Points away from the kinks at alpha * x + beta = 0 and 1.
    x = np.array([-4.0, -2.0, -1.0, 0.3, 1.2, 1.9, 4.0])
    check_numeric_gradient("hard_sigmoid", [x], alpha=0.3, beta=0.4)


def svm_grad_ref(out, label, margin, coef, use_linear):
    """MXNet's L1/L2-SVM gradient over (all axes but the last, the last)."""
    o = out.astype(np.float64).reshape(-1, out.shape[-1])
    k = label.reshape(-1)[:o.shape[0]].astype(int)
    onehot = np.zeros_like(o, dtype=bool)
    onehot[np.arange(o.shape[0]), k] = True
    m, c = _f32(margin), _f32(coef)
    if use_linear:
        g = np.where(onehot, -(m > o).astype(float) * c, (m > -o).astype(float) * c)
    else:
        g = np.where(onehot, np.where(m > o, 2 * (m - o), 0) * -c,
                     np.where(m > -o, -2 * (m + o), 0) * -c)
    return g.reshape(out.shape)


@pytest.mark.parametrize("use_linear", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 6), (7,)])
def test_svm_output_against_numpy(shape, dtype, use_linear):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    label = rng.integers(0, shape[-1], shape[:-1]).astype(dtype)
    kw = dict(margin=0.8, regularization_coefficient=1.3, use_linear=use_linear)
    y = invoke("SVMOutput", [x, label], **kw)
    np.testing.assert_array_equal(y, x)
    dx, dl = invoke("_backward_SVMOutput", [label, y], **kw)
    np.testing.assert_allclose(dx.astype(np.float64),
                               svm_grad_ref(x, label, 0.8, 1.3, use_linear),
                               rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    np.testing.assert_array_equal(dl, 0)


@pytest.mark.parametrize("use_linear", [False, True])
def test_svm_output_against_mxnet(use_linear):
    c = {f: DATA[f"svm.{use_linear}.{f}"] for f in ("x", "label", "y", "dx")}
    kw = dict(margin=0.7, regularization_coefficient=1.5, use_linear=use_linear)
    y = invoke("SVMOutput", [c["x"], c["label"]], **kw)
    np.testing.assert_array_equal(y, c["y"])
    np.testing.assert_array_equal(invoke("_backward_SVMOutput", [c["label"], y], **kw)[0],
                                  c["dx"])


def test_svm_output_reqs(nn):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    label = np.array([0, 4, 2, 1], np.float32)
    nn.check_reqs("SVMOutput", [x, label], [x], {}, "float32")
    want = svm_grad_ref(x, label, 1.0, 1.0, False)
    nn.check_reqs("_backward_SVMOutput", [label, x], [want, np.zeros(4)], {}, "float32")


def test_inference_and_errors():
    svm, hs = get("SVMOutput"), get("hard_sigmoid")
    p = svm.parse_params({})
    assert infer_shapes(svm, p, [(5, 4), None]) == ([(5, 4), (5,)], [(5, 4)])
    assert infer_shapes(svm, p, [(0, 3, 4), None])[0][1] == (0, 3)
    assert infer_shapes(svm, p, [None, None], [(2, 6)])[0] == [(2, 6), (2,)]
    with pytest.raises(ShapeError, match="label"):
        infer_shapes(svm, p, [(5, 4), (4,)])
    with pytest.raises(TypeInferenceError):
        infer_types(svm, p, ["float32", "float64"])
    with pytest.raises(TypeInferenceError, match="supported"):
        infer_types(hs, hs.parse_params({}), ["int32"])
    assert hs.params["alpha"].default == 0.2 and hs.params["beta"].default == 0.5
    assert svm.params["margin"].default == 1.0 and not svm.params["use_linear"].default
