"""SoftmaxOutput, the regression outputs, MakeLoss and BlockGrad: forward and
backward against NumPy references of MXNet 1.x's semantics, every req, the
gradient makers, and central finite differences of the losses these
operators' gradients belong to (their gradients are not those of the
forward output, so finite differences of the output would not apply)."""
import math

import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import symbolic_gradient

DTYPES = ["float16", "float32", "float64"]


# --- references -------------------------------------------------------------------
def _geometry(shape, multi=False, preserve=False):
    if multi:
        return shape[0], shape[1], math.prod(shape[2:])
    if preserve:
        return math.prod(shape[:-1]), shape[-1], 1
    return shape[0], math.prod(shape[1:]), 1


def softmax_ref(x, multi=False, preserve=False):
    outer, n, inner = _geometry(x.shape, multi, preserve)
    x3 = x.astype(np.float64).reshape(outer, n, inner)
    e = np.exp(x3 - x3.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).reshape(x.shape)


def _classes(v):
    return np.trunc(np.asarray(v, np.float64)).astype(np.int64)


def softmax_output_grad_ref(out, label, og=None, grad_scale=1.0, ignore_label=-1.0,
                            multi_output=False, use_ignore=False, preserve_shape=False,
                            normalization="null", out_grad=False, smooth_alpha=0.0):
    out = out.astype(np.float64)
    label = np.asarray(label, np.float64)
    if label.shape == out.shape:
        g = (out - label) * grad_scale
        return g * og if out_grad else g
    outer, n, inner = _geometry(out.shape, multi_output, preserve_shape)
    k = _classes(label.reshape(-1)[:outer * inner]).reshape(outer, 1, inner)
    hit = np.arange(n).reshape(1, n, 1) == k
    off = smooth_alpha / (n - 1) if n > 1 else 0.0
    g = out.reshape(outer, n, inner) - np.where(hit, 1 - smooth_alpha, off)
    if use_ignore:
        g = np.where(k == int(ignore_label), 0.0, g)
    if normalization == "valid":
        norm = max(int(np.sum(_classes(label) != int(ignore_label))), 1)
    else:
        norm = (label.shape[0] if multi_output else label.size) if normalization == "batch" else 1
        if multi_output:
            norm *= inner
    g = (g * grad_scale / norm).reshape(out.shape)
    return g * og if out_grad else g


def _labels(rng, shape, n, ignore=None):
    lab = rng.integers(0, n, size=shape).astype(np.float64)
    if ignore is not None:
        lab.reshape(-1)[::3] = ignore
    return lab


# (data shape, label shape, params)
SOFTMAX_CASES = [
    ((4, 5), (4,), {}),
    ((3, 2, 4), (3, 2), {"preserve_shape": True}),
    ((2, 3, 4), (2, 3), {}),     # flattened to (2, 12); MXNet reads the first 2 labels
    ((2, 4, 3, 2), (2, 3, 2), {"multi_output": True}),
    ((2, 4, 3, 2), (2, 6), {"multi_output": True}),
    ((2, 4, 3), (2, 1, 3), {"multi_output": True}),
    ((3, 6), (3, 6), {}),                        # probabilities
    ((2, 3, 4), (2, 3, 4), {"multi_output": True}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(SOFTMAX_CASES)))
def test_softmax_output_forward(nn, dtype, case):
    dshape, lshape, params = SOFTMAX_CASES[case]
    rng = np.random.default_rng(case)
    x = (rng.standard_normal(dshape) * 3).astype(dtype)
    label = rng.uniform(0, 1, lshape).astype(dtype)
    want = softmax_ref(x, params.get("multi_output"), params.get("preserve_shape"))
    nn.check_reqs("SoftmaxOutput", [x, label], [want], params, dtype)
    nn.check_reqs("Softmax", [x, label], [want], params, dtype)     # the deprecated alias


BACKWARD_PARAMS = [
    {},
    {"grad_scale": 2.5, "normalization": "batch"},
    {"use_ignore": True, "ignore_label": 1.0, "normalization": "valid"},
    {"normalization": "valid", "ignore_label": 2.0},          # counts without use_ignore
    {"smooth_alpha": 0.3, "grad_scale": 0.5},
    {"smooth_alpha": 0.2, "use_ignore": True, "ignore_label": 0.0, "normalization": "batch"},
    {"out_grad": True, "grad_scale": 1.5},
    {"out_grad": True, "use_ignore": True, "ignore_label": 3.0, "normalization": "valid"},
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("extra", range(len(BACKWARD_PARAMS)))
@pytest.mark.parametrize("case", range(len(SOFTMAX_CASES)))
def test_softmax_output_backward(nn, dtype, case, extra):
    dshape, lshape, base = SOFTMAX_CASES[case]
    params = dict(base, **BACKWARD_PARAMS[extra])
    rng = np.random.default_rng(10 * case + extra)
    x = rng.standard_normal(dshape).astype(dtype)
    _, n, _ = _geometry(dshape, base.get("multi_output"), base.get("preserve_shape"))
    if lshape == dshape:
        label = softmax_ref(rng.standard_normal(dshape)).astype(dtype)
    else:
        label = _labels(rng, lshape, n, params.get("ignore_label")).astype(dtype)
    out = invoke("SoftmaxOutput", [x, label], **params)
    og = rng.uniform(0.5, 1.5, dshape).astype(dtype)
    want = softmax_output_grad_ref(out, label, og.astype(np.float64), **params)
    inputs = ([og] if params.get("out_grad") else []) + [label, out]
    nn.check_reqs("_backward_SoftmaxOutput", inputs, [want, np.zeros(lshape)], params, dtype)
    # the gradient maker builds the same node (out_grad read only when asked)
    got = symbolic_gradient("SoftmaxOutput", [x.astype(np.float64), label.astype(np.float64)],
                            [og.astype(np.float64)], **params)
    want64 = softmax_output_grad_ref(invoke("SoftmaxOutput", [x.astype(np.float64),
                                                              label.astype(np.float64)],
                                            **params), label, og, **params)
    np.testing.assert_allclose(got[0], want64, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(got[1], 0)


def test_softmax_output_documented_example():
    """MXNet's docstring example: multi_output with use_ignore."""
    data = np.array([[1, 2, 3, 4], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]], np.float32)
    label = np.array([1, 0, 2, 3], np.float32)
    params = dict(multi_output=True, use_ignore=True, ignore_label=1)
    out = invoke("SoftmaxOutput", [data, label], **params)
    np.testing.assert_allclose(out[0], [0.0320586, 0.08714432, 0.23688284, 0.64391428],
                               rtol=1e-5)
    dx, _ = invoke("_backward_SoftmaxOutput", [label, out], **params)
    np.testing.assert_allclose(dx, [[0, 0, 0, 0], [-0.75, 0.25, 0.25, 0.25],
                                    [0.25, 0.25, -0.75, 0.25], [0.25, 0.25, 0.25, -0.75]],
                               atol=1e-6)


@pytest.mark.parametrize("params", [
    {}, {"normalization": "batch", "grad_scale": 3.0}, {"smooth_alpha": 0.25},
    {"use_ignore": True, "ignore_label": 2.0, "normalization": "valid"},
    {"multi_output": True, "normalization": "batch"},
    {"preserve_shape": True, "smooth_alpha": 0.1, "normalization": "valid"},
])
def test_softmax_output_gradient_is_the_cross_entropy_derivative(nn, params):
    """Finite differences of the cross-entropy loss (with smoothed targets and
    MXNet's normalizer) equal the backward."""
    multi, preserve = params.get("multi_output", False), params.get("preserve_shape", False)
    dshape = (3, 4, 2) if multi else (3, 2, 4) if preserve else (5, 4)
    lshape = (3, 2) if multi or preserve else (5,)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(dshape)
    outer, n, inner = _geometry(dshape, multi, preserve)
    label = _labels(rng, lshape, n, params.get("ignore_label"))
    k = _classes(label).reshape(outer, 1, inner)
    alpha = params.get("smooth_alpha", 0.0)
    target = np.where(np.arange(n).reshape(1, n, 1) == k, 1 - alpha, alpha / (n - 1))
    keep = np.ones_like(k, bool)
    if params.get("use_ignore"):
        keep = k != int(params["ignore_label"])
    def loss(v):
        p = invoke("SoftmaxOutput", [v, label], **params).reshape(outer, n, inner)
        return -np.sum(np.where(keep, target * np.log(p), 0.0))

    num = nn.numeric_grad(loss, x, np.ones(()))
    got, _ = invoke("_backward_SoftmaxOutput", [label, invoke("SoftmaxOutput", [x, label],
                                                               **params)], **params)
    norm = {"null": 1.0, "batch": float(lshape[0] if multi else math.prod(lshape)),
            "valid": float(max(np.sum(_classes(label) != int(params.get("ignore_label", -1))),
                               1))}[params.get("normalization", "null")]
    if multi and params.get("normalization", "null") != "valid":
        norm *= inner
    np.testing.assert_allclose(got, num * params.get("grad_scale", 1.0) / norm, rtol=1e-6,
                               atol=1e-8)


def test_softmax_output_label_errors():
    x = np.zeros((4, 5), np.float32)
    with pytest.raises(ShapeError, match=r"SoftmaxOutput: argument 'label' has shape \(5,\), "
                                         r"expected \(4,\)"):
        invoke("SoftmaxOutput", [x, np.zeros(5, np.float32)])
    with pytest.raises(ShapeError, match=r"with multi_output=True and 'data' \(2, 3, 4\) it "
                                         r"must be \(2, 4\)"):
        invoke("SoftmaxOutput", [np.zeros((2, 3, 4), np.float32), np.zeros((2, 3), np.float32)],
               multi_output=True)
    with pytest.raises(ShapeError, match="needs at least 2 dimensions"):
        invoke("SoftmaxOutput", [np.zeros(4, np.float32), np.zeros(4, np.float32)],
               multi_output=True)
    with pytest.raises(TypeInferenceError, match="SoftmaxOutput: argument 'label' has dtype "
                                                 "int32, which differs from 'data' float32"):
        invoke("SoftmaxOutput", [x, np.zeros(4, np.int32)])
    with pytest.raises(ParamError, match="'normalization' must be one of"):
        invoke("SoftmaxOutput", [x, np.zeros(4, np.float32)], normalization="mean")
    with pytest.raises(ParamError, match="'smooth_alpha' must be in"):
        invoke("SoftmaxOutput", [x, np.zeros(4, np.float32)], smooth_alpha=1.5)
    with pytest.raises(ShapeError, match="_backward_SoftmaxOutput: argument 'ograd' has "
                                         "shape"):
        invoke("_backward_SoftmaxOutput", [np.zeros((4, 4), np.float32),
                                           np.zeros(4, np.float32), x], out_grad=True)


def test_softmax_output_string_params_and_inputs():
    op = get("SoftmaxOutput")
    p = op.parse_params({"grad_scale": "0.5", "use_ignore": "True", "normalization": "valid",
                         "multi_output": "0", "smooth_alpha": "0.1", "out_grad": "False"})
    assert p["grad_scale"] == 0.5 and p["use_ignore"] and not p["multi_output"]
    back = get("_backward_SoftmaxOutput")
    assert back.input_names(back.parse_params({})) == ["label", "out_data"]
    assert back.input_names(back.parse_params({"out_grad": True})) == ["ograd", "label",
                                                                       "out_data"]


# --- regression outputs ---------------------------------------------------------------
REGRESSION = {
    "LinearRegressionOutput": (lambda x: x, lambda d: d),
    "LogisticRegressionOutput": (lambda x: 1 / (1 + np.exp(-x)), lambda d: d),
    "MAERegressionOutput": (lambda x: x, lambda d: np.where(d > 0, 1.0, -1.0)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((4, 3), (4, 3)), ((5, 1), (5,)), ((6,), (6, 1)),
                                    ((2, 3, 2), (2, 6))])
@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_regression_forward_backward(nn, name, shapes, dtype):
    fwd, diff = REGRESSION[name]
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal(shapes[0]).astype(dtype)
    label = rng.standard_normal(shapes[1]).astype(dtype)
    params = {"grad_scale": 1.5}
    y = fwd(x.astype(np.float64))
    nn.check_reqs(name, [x, label], [y], params, dtype)
    out = invoke(name, [x, label], **params)
    num_output = label.size / label.shape[0]
    d = out.astype(np.float64) - label.astype(np.float64).reshape(out.shape)
    want = 1.5 / num_output * diff(d)
    for back in (f"_backward_{name}", get(f"_backward_{name}").aliases[0]):
        nn.check_reqs(back, [label, out], [want, np.zeros(label.shape)], params, dtype)
    got = symbolic_gradient(name, [x.astype(np.float64), label.astype(np.float64)],
                            [np.ones(x.shape)], **params)
    want64 = 1.5 / num_output * diff(fwd(x.astype(np.float64))
                                     - label.astype(np.float64).reshape(x.shape))
    np.testing.assert_allclose(got[0], want64, rtol=1e-12)
    np.testing.assert_array_equal(got[1], 0)


@pytest.mark.parametrize("name, loss", [
    ("LinearRegressionOutput", lambda y, t: 0.5 * np.sum((y - t) ** 2)),
    ("LogisticRegressionOutput", lambda y, t: -np.sum(t * np.log(y) + (1 - t) * np.log(1 - y))),
    ("MAERegressionOutput", lambda y, t: np.sum(np.abs(y - t))),
])
def test_regression_gradient_is_the_loss_derivative(nn, name, loss):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3))
    label = rng.uniform(0.1, 0.9, (4, 3))
    num = nn.numeric_grad(lambda v: loss(invoke(name, [v, label], grad_scale=2.0), label), x,
                          np.ones(()))
    got, _ = invoke(f"_backward_{name}", [label, invoke(name, [x, label])], grad_scale=2.0)
    np.testing.assert_allclose(got, num * 2.0 / 3, rtol=1e-6, atol=1e-8)


def test_mae_sign_at_equality_is_minus_one():
    x = np.array([[1.0], [2.0]])
    dx, _ = invoke("_backward_MAERegressionOutput", [np.array([1.0, 1.0]), x])
    np.testing.assert_array_equal(dx, [[-1.0], [1.0]])     # MXNet's minus_sign


def test_regression_label_errors():
    with pytest.raises(ShapeError, match=r"LinearRegressionOutput: argument 'label' has shape "
                                         r"\(4, 2\), which does not match 'data' \(4, 3\)"):
        invoke("LinearRegressionOutput", [np.zeros((4, 3)), np.zeros((4, 2))])
    with pytest.raises(ShapeError, match="does not match 'data'"):
        invoke("MAERegressionOutput", [np.zeros((4, 3)), np.zeros((3, 4))])
    with pytest.raises(TypeInferenceError, match="supported: float16, float32, float64"):
        invoke("LogisticRegressionOutput", [np.zeros((4,), np.int32), np.zeros(4, np.int32)])


# --- MakeLoss / BlockGrad -----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, params, divisor", [
    ((3, 4), {}, 1.0),
    ((3, 4), {"grad_scale": 2.0, "normalization": "batch"}, 3.0),
    ((2, 3, 4), {"normalization": "batch"}, 6.0),       # FlatTo2D: all axes but the last
    ((5,), {"normalization": "batch"}, 1.0),            # a 1-D loss is one row in MXNet
    ((3, 4), {"normalization": "valid", "valid_thresh": 0.2}, None),
])
def test_make_loss(nn, dtype, shape, params, divisor):
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    nn.check_reqs("MakeLoss", [x], [x.astype(np.float64)], params, dtype)
    if divisor is None:
        divisor = max(int(np.sum(x.astype(np.float64) > params["valid_thresh"])), 1)
    want = np.full(shape, params.get("grad_scale", 1.0) / divisor)
    nn.check_reqs("_backward_MakeLoss", [x], [want], params, dtype)
    got = symbolic_gradient("MakeLoss", [x.astype(np.float64)], [rng.standard_normal(shape)],
                            **params)
    np.testing.assert_allclose(got[0], want, rtol=1e-12)


def test_make_loss_valid_never_divides_by_zero():
    dx = invoke("_backward_MakeLoss", [np.zeros((2, 2))], normalization="valid",
                valid_thresh=1.0)
    np.testing.assert_array_equal(dx, np.ones((2, 2)))


@pytest.mark.parametrize("name", ["BlockGrad", "stop_gradient"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "int64"])
def test_block_grad(nn, name, dtype):
    x = np.arange(12).reshape(3, 4).astype(dtype)
    if dtype in DTYPES:
        nn.check_reqs(name, [x], [x], {}, dtype)
    np.testing.assert_array_equal(invoke(name, [x]), x)
    out = np.ones((3, 4), dtype)
    invoke(name, [x], out=out, req="add")
    np.testing.assert_array_equal(out, x + np.ones((3, 4), dtype))
    got = symbolic_gradient(name, [x.astype(np.float64)], [np.ones((3, 4))])
    np.testing.assert_array_equal(got[0], np.zeros((3, 4)))


def test_loss_ops_take_no_finite_difference_gradient_of_their_output():
    """The makers are registered and give the loss gradients, not out_grad
    through the forward: MakeLoss ignores out_grad."""
    x = np.ones((2, 2))
    a = symbolic_gradient("MakeLoss", [x], [np.full((2, 2), 5.0)])[0]
    np.testing.assert_array_equal(a, np.ones((2, 2)))


@pytest.mark.parametrize("name, params", [
    ("SoftmaxOutput", {}), ("SoftmaxOutput", {"multi_output": True}),
    ("LinearRegressionOutput", {}), ("LogisticRegressionOutput", {}),
    ("MAERegressionOutput", {}), ("MakeLoss", {}), ("BlockGrad", {}),
])
def test_forward_in_place(name, params):
    """The forwards declare (data -> output) in place, as MXNet's
    ForwardInplaceOption does: writing over the input gives the result."""
    assert get(name).inplace == ((0, 0),)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4, 2))
    label = {"SoftmaxOutput": np.zeros((3, 2) if params else (3, 4)),
             "MakeLoss": None, "BlockGrad": None}.get(name, rng.standard_normal((3, 4, 2)))
    inputs = [x] if label is None else [x, label]
    want = invoke(name, inputs, **params)
    invoke(name, inputs, out=x, req="inplace", **params)
    np.testing.assert_allclose(x, want, rtol=1e-12)
