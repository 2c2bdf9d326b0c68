"""Activation, LeakyReLU, softmax / log_softmax forward and backward against
NumPy references and central finite differences."""
import numpy as np
import pytest

from mx_ops import invoke
from mx_ops._params import ParamError
from mx_ops.registry import ShapeError, TypeInferenceError

DTYPES = ["float16", "float32", "float64"]
SELU_A, SELU_L = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

ACT = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))),
    "softsign": lambda x: x / (1 + np.abs(x)),
}
ACT_GRAD = {
    "relu": lambda x: (x > 0) * 1.0,
    "sigmoid": lambda x: ACT["sigmoid"](x) * (1 - ACT["sigmoid"](x)),
    "tanh": lambda x: 1 - np.tanh(x) ** 2,
    "softrelu": lambda x: ACT["sigmoid"](x),
    "softsign": lambda x: 1 / (1 + np.abs(x)) ** 2,
}


def _leaky(act, slope=0.25):
    return {"leaky": lambda x: np.where(x > 0, x, slope * x),
            "elu": lambda x: np.where(x > 0, x, slope * np.expm1(x)),
            "selu": lambda x: SELU_L * np.where(x > 0, x, SELU_A * np.expm1(x))}[act]


def _data(rng, shape, dtype):
    # Away from 0 so the kinks of relu-like functions stay out of the
    # finite differences.
    x = rng.standard_normal(shape) * 3
    x[np.abs(x) < 0.05] += 0.2
    return x.astype(dtype)


def _shape(rng):
    return tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", sorted(ACT))
def test_activation_forward_backward(nn, dtype, act):
    rng = np.random.default_rng(hash(act) % 1000)
    x = _data(rng, _shape(rng), dtype)
    xd = x.astype(np.float64)
    y = ACT[act](xd)
    nn.check_reqs("Activation", [x], [y], dict(act_type=act), dtype)
    og = rng.standard_normal(x.shape).astype(dtype)
    yk = invoke("Activation", [x], act_type=act)
    nn.check_reqs("_backward_Activation", [og, yk], [og * ACT_GRAD[act](xd)],
                  dict(act_type=act), dtype)


@pytest.mark.parametrize("act", sorted(ACT))
def test_activation_finite_differences(nn, act):
    rng = np.random.default_rng(5)
    x, og = _data(rng, (3, 4), "float64"), rng.standard_normal((3, 4))
    y = invoke("Activation", [x], act_type=act)
    dx = invoke("_backward_Activation", [og, y], act_type=act)
    num = nn.numeric_grad(lambda v: invoke("Activation", [v], act_type=act), x, og)
    np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-8)


def test_softrelu_large_inputs_do_not_overflow():
    y = invoke("Activation", [np.array([1000.0, -1000.0], np.float32)], act_type="softrelu")
    np.testing.assert_allclose(y, [1000.0, 0.0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["leaky", "elu", "selu"])     # rrelu: test_rrelu.py
def test_leaky_forward_backward(nn, dtype, act):
    rng = np.random.default_rng(7)
    x = _data(rng, (2, 3, 4), dtype)
    f = _leaky(act, 0.3)
    params = dict(act_type=act, slope=0.3)
    nn.check_reqs("LeakyReLU", [x], [f(x.astype(np.float64))], params, dtype)
    if dtype == "float64":
        og = rng.standard_normal(x.shape)
        y = invoke("LeakyReLU", [x], **params)
        dx = invoke("_backward_LeakyReLU", [og, y], **params)
        num = nn.numeric_grad(lambda v: invoke("LeakyReLU", [v], **params), x, og)
        np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-8)
        nn.check_reqs("_backward_LeakyReLU", [og, y], [dx], params, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gshape", ["channel", "shared"])
def test_prelu(nn, dtype, gshape):
    rng = np.random.default_rng(8)
    x = _data(rng, (2, 3, 4, 2), dtype)
    gamma = (rng.random(3 if gshape == "channel" else 1) + 0.1).astype(dtype)
    g4 = gamma.astype(np.float64).reshape(-1, 1, 1)
    xd = x.astype(np.float64)
    nn.check_reqs("LeakyReLU", [x, gamma], [np.where(xd > 0, xd, g4 * xd)],
                  dict(act_type="prelu"), dtype)
    og = rng.standard_normal(x.shape).astype(dtype)
    ogd = og.astype(np.float64)
    dx = ogd * np.where(xd > 0, 1, g4)
    dg = (ogd * np.where(xd > 0, 0, xd)).sum(axis=(0, 2, 3))
    if gshape == "shared":
        dg = dg.sum(keepdims=True)
    nn.check_reqs("_backward_LeakyReLU", [og, x, gamma], [dx, dg], dict(act_type="prelu"),
                  dtype)
    if dtype == "float64":
        f = lambda v: invoke("LeakyReLU", [x, v], act_type="prelu")
        np.testing.assert_allclose(dg, nn.numeric_grad(f, gamma, og), rtol=1e-6)
        f = lambda v: invoke("LeakyReLU", [v, gamma], act_type="prelu")
        np.testing.assert_allclose(dx, nn.numeric_grad(f, x, og), rtol=1e-6)


def _softmax_ref(x, axis, t, log):
    z = (x - x.max(axis=axis, keepdims=True)) / t
    ls = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return ls if log else np.exp(ls)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_forward_backward(nn, dtype, name):
    rng = np.random.default_rng(9)
    log = name == "log_softmax"
    for shape, axis, t in [((4, 7), -1, None), ((3, 5, 2), 1, 2.0), ((6,), 0, 0.5),
                           ((2, 3, 4, 5), 0, None)]:
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        params = dict(axis=axis) if t is None else dict(axis=axis, temperature=t)
        xd = x.astype(np.float64)
        nn.check_reqs(name, [x], [_softmax_ref(xd, axis, t or 1.0, log)], params, dtype)
        og = rng.standard_normal(shape).astype(dtype)
        y = invoke(name, [x], **params)
        yd, ogd = y.astype(np.float64), og.astype(np.float64)
        if log:
            want = (ogd - np.exp(yd) * ogd.sum(axis, keepdims=True)) / (t or 1.0)
        else:
            want = yd * (ogd - (ogd * yd).sum(axis, keepdims=True)) / (t or 1.0)
        nn.check_reqs(f"_backward_{name}", [og, y], [want], params, dtype)
        if dtype == "float64":
            num = nn.numeric_grad(lambda v: invoke(name, [v], **params), x, og)
            np.testing.assert_allclose(want, num, rtol=1e-5, atol=1e-8)


def test_softmax_is_stable_and_in_place():
    x = np.array([[1000.0, 1001.0, 999.0]], np.float32)
    y = invoke("softmax", [x])
    np.testing.assert_allclose(y, _softmax_ref(x.astype(np.float64), -1, 1, False), rtol=1e-6)
    ls = invoke("log_softmax", [np.array([0.0, -1e4])])
    np.testing.assert_allclose(ls, [0.0, -1e4])
    invoke("softmax", [x], out=x, req="inplace")
    np.testing.assert_allclose(x, y)


def test_errors_name_op_argument_and_shapes():
    with pytest.raises(ParamError, match="Activation: argument 'act_type' must be one of"):
        invoke("Activation", [np.ones(3)], act_type="gelu")
    with pytest.raises(ParamError, match="Activation: argument 'act_type' is required"):
        invoke("Activation", [np.ones(3)])
    with pytest.raises(TypeInferenceError, match="Activation: argument 'data' has dtype int32"):
        invoke("Activation", [np.ones(3, np.int32)], act_type="relu")
    with pytest.raises(ShapeError, match=r"LeakyReLU: argument 'gamma' has shape \(2,\); for "
                                         r"'data' \(2, 3, 4\) it must be \(3,\)"):
        invoke("LeakyReLU", [np.ones((2, 3, 4)), np.ones(2)], act_type="prelu")
    with pytest.raises(ValueError, match=r"LeakyReLU: takes 2 input\(s\) \(data, gamma\)"):
        invoke("LeakyReLU", [np.ones((2, 3))], act_type="prelu")
    with pytest.raises(ShapeError, match=r"softmax: argument 'axis' is 2, out of range for "
                                         r"'data' of shape \(2, 3\)"):
        invoke("softmax", [np.ones((2, 3))], axis=2)
    with pytest.raises(ShapeError, match=r"_backward_softmax: argument 'out_data' has shape "
                                         r"\(2, 2\), which differs from 'out_grad' \(2, 3\)"):
        invoke("_backward_softmax", [np.ones((2, 3)), np.ones((2, 2))])
