"""moments and _backward_moments against NumPy (every dtype, axes layouts
that merge into every walk: reduced innermost, kept innermost, alternating
groups, size-1 dimensions), MXNet 1.9.1's outputs and gradients
(tests/data/norm_mxnet191.npz), finite differences, every req, shape and
type inference (partial too) and errors."""
import ast
from pathlib import Path

import numpy as np
import pytest

from mx_ops import get, infer_shapes, infer_types, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DATA = np.load(Path(__file__).parent / "data" / "norm_mxnet191.npz")
TOL = {"float16": 3e-3, "float32": 1e-5, "float64": 1e-12}


def ref(x, axes, keepdims=False):
    x = x.astype(np.float64)
    axes = tuple(axes)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=keepdims)
    mean = mean if keepdims else mean.reshape(var.shape)
    if var.ndim == 0:
        mean, var = mean.reshape(1), var.reshape(1)
    return mean, var


CASES = [((3, 4, 5), (1,)), ((3, 4, 5), (0, 2)), ((3, 4, 5), (2,)), ((3, 4, 5), (0,)),
         ((3, 4, 5), (0, 1, 2)), ((2, 1, 3, 4, 5), (0, 3)), ((2, 3, 4, 5), (1, 3)),
         ((4, 6), (-1,)), ((7,), (0,)), ((64, 32, 24), (0, 2)), ((2, 1, 3), (1,)),
         ((3, 5, 300), (1,)), ((40, 700), (0,))]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_and_backward_against_numpy(case, keepdims):
    shape, axes = CASES[case]
    rng = np.random.default_rng(case)
    for dtype in ("float16", "float32", "float64"):
        x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
        mean_ref, var_ref = ref(x, axes, keepdims)
        mean, var = invoke("moments", [x], axes=axes, keepdims=keepdims)
        assert mean.dtype == var.dtype == np.dtype(dtype) and mean.shape == mean_ref.shape
        tol = TOL[dtype]
        np.testing.assert_allclose(mean.astype(np.float64), mean_ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(var.astype(np.float64), var_ref, rtol=tol, atol=tol)
        gm = rng.standard_normal(mean.shape).astype(dtype)
        gv = rng.standard_normal(mean.shape).astype(dtype)
        dx = invoke("_backward_moments", [gm, gv, x, mean], axes=axes, keepdims=keepdims)
        n = x.size // mean.size
        kshape = [1 if i in [a % x.ndim for a in axes] else e for i, e in enumerate(shape)]
        m64 = mean.astype(np.float64).reshape(kshape)
        want = (gm.astype(np.float64).reshape(kshape)
                + 2 * gv.astype(np.float64).reshape(kshape) * (x - m64)) / n
        np.testing.assert_allclose(dx.astype(np.float64), want, rtol=tol * 4, atol=tol * 4)


@pytest.mark.parametrize("key", sorted({k.rsplit(".", 1)[0] for k in DATA.files
                                        if k.startswith("moments.")}))
def test_against_mxnet(key):
    _, _, axes, keep = key.split(".")
    c = {f: DATA[f"{key}.{f}"] for f in ("x", "mean", "var", "og_mean", "og_var", "dx")}
    kw = dict(axes=ast.literal_eval(axes), keepdims=keep == "True")
    mean, var = invoke("moments", [c["x"]], **kw)
    for got, want in ((mean, c["mean"]), (var, c["var"])):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    dx = invoke("_backward_moments", [c["og_mean"], c["og_var"], c["x"], mean], **kw)
    np.testing.assert_allclose(dx, c["dx"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, axes, keepdims", [((3, 4), (1,), False),
                                                   ((2, 3, 4), (0, 2), True)])
def test_numeric_gradient(shape, axes, keepdims):
    x = np.random.default_rng(1).standard_normal(shape)
    check_numeric_gradient("moments", [x], axes=axes, keepdims=keepdims)


def test_reqs(nn):
    x = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)
    mean, var = ref(x, (0,))
    nn.check_reqs("moments", [x], [mean, var], {"axes": (0,)}, "float32")
    gm, gv = (np.random.default_rng(3).standard_normal(6).astype(np.float32) for _ in "ab")
    m32 = mean.astype(np.float32)
    want = (gm + 2 * gv * (x - m32)) / 5
    nn.check_reqs("_backward_moments", [gm, gv, x, m32], [want], {"axes": (0,)}, "float32")


def test_inference_and_errors():
    op = get("moments")
    p = lambda **kw: op.parse_params(kw)          # noqa: E731
    assert infer_shapes(op, p(axes=(1,)), [(3, 4, 5)])[1] == [(3, 5), (3, 5)]
    assert infer_shapes(op, p(axes=(0, 1, 2)), [(3, 4, 5)])[1] == [(1,), (1,)]
    assert infer_shapes(op, p(axes=(0, 2), keepdims=True), [(3, 4, 5)])[1] == [(1, 4, 1)] * 2
    # Partial: an unknown batch stays unknown; reduced away, it does not matter.
    assert infer_shapes(op, p(axes=(1,)), [(0, 3)])[1] == [(0,), (0,)]
    assert infer_shapes(op, p(axes=(0,)), [(0, 3)])[1] == [(3,), (3,)]
    assert infer_types(op, p(axes=(0,)), ["float16"])[1] == ["float16", "float16"]
    with pytest.raises(ShapeError, match="empty"):
        infer_shapes(op, p(), [(3, 4)])
    with pytest.raises(ShapeError, match="out of range"):
        infer_shapes(op, p(axes=(2,)), [(3, 4)])
    with pytest.raises(TypeInferenceError, match="supported"):
        infer_types(op, p(axes=(0,)), ["int32"])
