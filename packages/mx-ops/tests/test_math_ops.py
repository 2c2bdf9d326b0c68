"""Element-wise math and losses of issue 15 against NumPy/SciPy-free
references, finite differences and the MXNet 1.9.1 outputs of
data/math_mxnet191.json (data/make_math_reference.py): LeakyReLU's gelu and
selu (MXNet's selu gradient), rrelu's two outputs, erfinv, logical_not,
softmin, SoftmaxActivation, softmax_cross_entropy."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mx_ops import invoke, registry
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ops.loss import _softmax_ce_cpu
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient

REF = json.loads((Path(__file__).parent / "data" / "math_mxnet191.json").read_text())
DTYPES = ["float16", "float32", "float64"]
SELU_A, SELU_L = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def ref(key, *names, dtype=None):
    d = REF[key]
    return [np.asarray(d[n], dtype=dtype) for n in names]


def _erf(x):
    return np.vectorize(math.erf)(x)


# --- LeakyReLU: gelu, selu's gradient, rrelu's outputs ---------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ["selu", "gelu"])
def test_leaky_matches_mxnet(act, dtype):
    x, y, og, dx = ref(f"leaky.{act}.{dtype}", "x", "y", "og", "dx", dtype=dtype)
    got = invoke("LeakyReLU", [x], act_type=act)
    # gelu runs in float32 (as MXNet's), where 1 + erf(x) cancels below 0
    atol = 1e-6 if act == "gelu" else 1e-7
    np.testing.assert_allclose(got, y, rtol=1e-6, atol=atol)
    read = x if act == "gelu" else got                   # gelu's backward reads the input
    np.testing.assert_allclose(invoke("_backward_LeakyReLU", [og, read], act_type=act), dx,
                               rtol=1e-5, atol=1e-6)
    (sym,) = symbolic_gradient("LeakyReLU", [x], [og], act_type=act)
    np.testing.assert_allclose(sym, dx, rtol=1e-5, atol=1e-6)


def test_selu_gradient_is_mxnets_formula():
    """MXNet's selu_grad: lambda below 0 is lambda * (alpha + y), not the
    derivative y + lambda * alpha; at x = 0 (y = 0) it is lambda * alpha."""
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 3.0])
    y = invoke("LeakyReLU", [x], act_type="selu")
    dx = invoke("_backward_LeakyReLU", [np.ones_like(x), y], act_type="selu")
    np.testing.assert_allclose(dx, np.where(y > 0, SELU_L, SELU_L * (SELU_A + y)), rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_forward_backward_and_reqs(nn, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4, 5)) * 2).astype(dtype)
    xd = x.astype(np.float64)
    y = 0.5 * xd * (1 + _erf(xd / math.sqrt(2)))
    og = rng.standard_normal(x.shape).astype(dtype)
    dy = 0.5 * (1 + _erf(xd / math.sqrt(2))) + xd * np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi)
    dx = og.astype(np.float64) * dy
    if dtype == "float64":         # computed in float32, as MXNet's: float32's accuracy
        np.testing.assert_allclose(invoke("LeakyReLU", [x], act_type="gelu"), y, atol=1e-6)
        np.testing.assert_allclose(invoke("_backward_LeakyReLU", [og, x], act_type="gelu"), dx,
                                   rtol=1e-6, atol=1e-6)
        return
    nn.check_reqs("LeakyReLU", [x], [y], dict(act_type="gelu"), dtype)
    nn.check_reqs("_backward_LeakyReLU", [og, x], [dx], dict(act_type="gelu"), dtype)
    if dtype == "float32":       # finite differences of the float32-accurate forward
        num = nn.numeric_grad(lambda v: invoke("LeakyReLU", [v], act_type="gelu"), xd,
                              og.astype(np.float64), eps=1e-3)
        np.testing.assert_allclose(invoke("_backward_LeakyReLU", [og, x], act_type="gelu"),
                                   num, rtol=1e-3, atol=1e-3)


def test_rrelu_has_two_visible_outputs_like_mxnet():
    assert REF["rrelu_outputs"] == 2
    op = registry.get("LeakyReLU")
    assert op.visible_output_count({**op.parse_params({}), "act_type": "rrelu"}) == 2
    assert op.visible_output_count(op.parse_params({})) == 1


# --- erfinv, logical_not --------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfinv_matches_mxnet(dtype):
    x, y, xg, dx = ref(f"erfinv.{dtype}", "x", "y", "x_grad", "dx", dtype=dtype)
    got = invoke("erfinv", [x])
    # MXNet's float64 erfinv is off by ~1e-16 in erf near +-1 (ours: ~1e-22)
    tol = 1e-6 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(got, y, rtol=tol, atol=tol)
    (sym,) = symbolic_gradient("erfinv", [xg], [np.ones_like(xg)])
    # MXNet's gradient scales by sqrt(pi) / 2 rounded to float32 (ours: double)
    np.testing.assert_allclose(sym, dx, rtol=1e-6 if dtype == "float32" else 1e-7)
    np.testing.assert_allclose(sym, math.sqrt(math.pi) / 2 * np.exp(got[np.abs(x) < 1] ** 2),
                               rtol=1e-6 if dtype == "float32" else 1e-14)


def test_erfinv_inverts_erf_and_has_its_gradient(nn):
    x = np.linspace(-0.999, 0.999, 101)
    np.testing.assert_allclose(_erf(invoke("erfinv", [x])), x, rtol=1e-14, atol=1e-15)
    nn.check_reqs("erfinv", [x.astype("float16")], [invoke("erfinv", [x])], {}, "float16")
    check_numeric_gradient("erfinv", [np.linspace(-0.9, 0.9, 13)])
    with pytest.raises(TypeInferenceError):
        invoke("erfinv", [np.zeros(3, np.int32)])


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_logical_not_matches_mxnet(nn, dtype):
    x, y = ref(f"logical_not.{dtype}", "x", "y", dtype=dtype)
    got = invoke("logical_not", [x])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, y)
    if dtype == "float32":
        nn.check_reqs("logical_not", [x], [y], {}, dtype)
    (g,) = symbolic_gradient("logical_not", [x.astype(np.float64)], [np.ones(x.shape)])
    np.testing.assert_array_equal(g, 0)


# --- softmin, SoftmaxActivation ---------------------------------------------------------
@pytest.mark.parametrize("case", ["default", "axis1_t2", "axis0"])
def test_softmin_matches_mxnet(case):
    x, y, og, dx = ref(f"softmin.{case}", "x", "y", "og", "dx", dtype="float32")
    params = REF[f"softmin.{case}"]["params"]
    got = invoke("softmin", [x], **params)
    np.testing.assert_allclose(got, y, rtol=1e-5, atol=1e-7)
    (sym,) = symbolic_gradient("softmin", [x], [og], **params)
    np.testing.assert_allclose(sym, dx, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((4, 300), -1), ((3, 5, 7), 1), ((2, 600, 3), 1)])
def test_softmin_is_softmax_of_minus_x_and_stable(nn, dtype, shape, axis):
    """Both kernel paths (contiguous rows, lane blocks), large inputs that
    overflow exp(-x) unless the minimum is the shift."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * 30 - 500).astype(dtype)
    xd = -x.astype(np.float64) / 2
    e = np.exp(xd - xd.max(axis, keepdims=True))
    y = e / e.sum(axis, keepdims=True)
    nn.check_reqs("softmin", [x], [y], dict(axis=axis, temperature=2.0), dtype)
    if dtype == "float64":
        check_numeric_gradient("softmin", [x[..., :4] / 100], axis=axis, temperature=2.0)


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_activation_matches_mxnet(nn, mode):
    x, y, og, dx = ref(f"softmax_activation.{mode}", "x", "y", "og", "dx", dtype="float32")
    nn.check_reqs("SoftmaxActivation", [x], [y], dict(mode=mode), "float32")
    (sym,) = symbolic_gradient("SoftmaxActivation", [x], [og], mode=mode)
    np.testing.assert_allclose(sym, dx, rtol=1e-4, atol=1e-6)
    axis = -1 if mode == "instance" else 1
    np.testing.assert_allclose(y, invoke("softmax", [x], axis=axis), rtol=1e-6)


def test_softmax_activation_checks_and_gradient():
    with pytest.raises(ShapeError, match="mode 'channel' needs at least 3"):
        invoke("SoftmaxActivation", [np.ones((2, 3), np.float32)], mode="channel")
    x = np.random.default_rng(5).standard_normal((2, 3, 2))
    check_numeric_gradient("SoftmaxActivation", [x], mode="channel")
    check_numeric_gradient("SoftmaxActivation", [x[:, :, 0]], mode="instance")


# --- softmax_cross_entropy -------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_cross_entropy_matches_mxnet(dtype):
    x, label, y, og, dx = ref(f"softmax_cross_entropy.{dtype}", "x", "label", "y", "og", "dx",
                              dtype=dtype)
    got = invoke("softmax_cross_entropy", [x, label])
    assert got.shape == (1,) and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, y, rtol=1e-5)
    dx_got, dlabel = symbolic_gradient("softmax_cross_entropy", [x, label], [og])
    np.testing.assert_allclose(dx_got, dx, rtol=1e-5, atol=1e-6)


def _ce_numpy(x, label):
    x = x.astype(np.float64)
    k = np.clip(np.nan_to_num(label.astype(np.float64), nan=0), 0, x.shape[1] - 1).astype(int)
    m = x.max(1, keepdims=True)
    s = np.exp(x - m).sum(1, keepdims=True)
    rows = np.arange(x.shape[0])
    grad = np.exp(x - m) / s
    grad[rows, k] -= 1
    return np.array([(np.log(s[:, 0]) + m[:, 0] - x[rows, k]).sum()]), grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 5), (300, 1000), (3, 1)])
def test_softmax_cross_entropy_against_numpy(nn, dtype, shape):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    label = rng.integers(0, shape[1], shape[0]).astype(dtype)
    loss, grad = _ce_numpy(x, label)
    tol = dict(float16=2e-2, float32=1e-5, float64=1e-12)[dtype]
    np.testing.assert_allclose(invoke("softmax_cross_entropy", [x, label]), loss,
                               rtol=tol * 10 if dtype == "float16" else tol)
    og = np.array([0.7], dtype)
    nn.check_reqs("_backward_softmax_cross_entropy", [og, x, label],
                  [0.7 * grad, np.zeros(shape[0])], {}, dtype)


@pytest.mark.parametrize("n", [31, 32, 33, 100, 1000])
def test_softmax_cross_entropy_row_maximum_at_every_lane(nn, n):
    # Logits near 1000 overflow float32's exp unless the shift is the row's
    # true maximum: one row per position of the maximum (every lane of the
    # kernel's max, the blocks' tail, the first element).
    rng = np.random.default_rng(n)
    x = rng.uniform(-40.0, 0.0, (n, n)).astype(np.float32) + 900.0
    x[np.arange(n), np.arange(n)] = 1000.0
    label = rng.integers(0, n, n).astype(np.float32)
    loss, grad = _ce_numpy(x, label)
    np.testing.assert_allclose(invoke("softmax_cross_entropy", [x, label]), loss, rtol=1e-5)
    got = invoke("_backward_softmax_cross_entropy", [np.ones(1, np.float32), x, label])[0]
    np.testing.assert_allclose(got, grad, rtol=1e-5, atol=1e-6)


def _ce_rows_numpy(x, label):
    """Each row's loss in float64 (inf and nan where the float64 formula
    gives them)."""
    x = x.astype(np.float64)
    rows = np.arange(x.shape[0])
    with np.errstate(all="ignore"):
        m = x.max(1)
        s = np.exp(x - m[:, None]).sum(1)
        return np.log(s) + m - x[rows, label.astype(int)]


def _ce_each_row(x, label):
    return np.array([invoke("softmax_cross_entropy", [x[i:i + 1], label[i:i + 1]])[0]
                     for i in range(x.shape[0])], np.float64)


@pytest.fixture(params=_softmax_ce_cpu.available_isas())
def ce_isa(request):
    """softmax_cross_entropy's kernels on each instruction set of this CPU."""
    old = _softmax_ce_cpu.set_isa(request.param)
    yield request.param
    _softmax_ce_cpu.set_isa(old)


@pytest.mark.parametrize("seed", range(3))
def test_softmax_cross_entropy_sum_exp_accuracy(ce_isa, seed):
    # The forward's exp only feeds each row's sum (vexp_isa.h's exp_term1).
    # With the label on the row's maximum the loss is log(sum), about
    # log 2 here: 999 logits spread w below a shift c chosen so that their
    # exps add up to about 1.  Terms below 2^-24 of the sum cannot show in
    # a float32 result; test_softmax_cross_entropy_extreme_logits has those.
    rng = np.random.default_rng(seed)
    spreads = [0.5, 1, 4, 10, 17, 30]
    x, label = np.empty((len(spreads), 1000), np.float32), np.empty(len(spreads), np.float32)
    for i, w in enumerate(spreads):
        c = np.log(w / (999 * -np.expm1(-w)))
        t = rng.uniform(c - w, c, 1000)
        k = rng.integers(1000)
        t[k] = 0
        x[i], label[i] = t + rng.uniform(-50, 50), k
    want = _ce_rows_numpy(x, label)
    # float32's sum of 1000 terms near 2 is a few 1e-7 off (measured: up
    # to 2.0e-7 on each instruction set); an exp 1e-6 off fails
    np.testing.assert_allclose(_ce_each_row(x, label), want, rtol=0, atol=5e-7)
    np.testing.assert_allclose(invoke("softmax_cross_entropy", [x, label]), [want.sum()],
                               rtol=5e-7)


def test_softmax_cross_entropy_extreme_logits(ce_isa):
    # +-1e30, -inf, +inf and nan logits give what the float64 formula
    # gives: a -inf or 1e30-below term adds nothing, a -inf label logit an
    # infinite loss, a row of -inf, an inf or a nan a nan loss.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((9, 37)).astype(np.float32)
    label = rng.integers(0, 37, 9).astype(np.float32)
    x[0, 3], label[0] = 1e30, 0
    x[1], x[1, 5], label[1] = -1e30, 1e30, 5
    x[2, 7], label[2] = -np.inf, 7
    x[3, ::2], label[3] = -np.inf, 1
    x[4] = -np.inf
    x[5, 9] = np.inf
    x[6, 4] = np.nan
    x[7], x[7, 0], label[7] = -200, 0, 0
    x[8, 0] = np.nan
    want = _ce_rows_numpy(x, label)
    assert np.isinf(want[2]) and np.isnan(want[[4, 5, 6, 8]]).all()
    np.testing.assert_allclose(_ce_each_row(x, label), want, rtol=1e-6, atol=1e-6)
    finite = [0, 1, 3, 7]
    np.testing.assert_allclose(invoke("softmax_cross_entropy", [x[finite], label[finite]]),
                               [want[finite].sum()], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_cross_entropy_many_classes(dtype):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((3, 200003)) * 4).astype(dtype)
    label = rng.integers(0, x.shape[1], 3).astype(dtype)
    np.testing.assert_allclose(invoke("softmax_cross_entropy", [x, label]),
                               [_ce_rows_numpy(x, label).sum()],
                               rtol=1e-5 if dtype == "float32" else 1e-12)


def test_softmax_cross_entropy_labels_clip_and_shapes():
    x = np.random.default_rng(7).standard_normal((4, 3))
    label = np.array([-2.0, 2.9, 7.0, np.nan])         # truncated, then clipped to the row
    loss, _ = _ce_numpy(x, np.array([0.0, 2.0, 2.0, 0.0]))
    np.testing.assert_allclose(invoke("softmax_cross_entropy", [x, label]), loss, rtol=1e-12)
    assert invoke("softmax_cross_entropy", [np.zeros((0, 3)), np.zeros(0)])[0] == 0
    with pytest.raises(ShapeError, match="must be 2-D"):
        invoke("softmax_cross_entropy", [np.zeros((2, 3, 4)), np.zeros(2)])
    with pytest.raises(ShapeError, match="one class index per row"):
        invoke("softmax_cross_entropy", [np.zeros((2, 3)), np.zeros(3)])
    with pytest.raises(TypeInferenceError):
        invoke("softmax_cross_entropy", [np.zeros((2, 3)), np.zeros(2, np.int32)])
    check_numeric_gradient("softmax_cross_entropy", [x, np.array([0.0, 2, 1, 1])],
                           check_inputs=[0])
