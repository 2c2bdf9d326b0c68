"""Activation, LeakyReLU, softmax / log_softmax forward and backward against
NumPy references and central finite differences."""
import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError

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
        if act == "selu":
            # MXNet's selu_grad: lambda * (alpha + y) below 0, not the
            # derivative y + lambda * alpha (test_math_ops.py: MXNet's outputs)
            num = og * np.where(y > 0, SELU_L, SELU_L * (SELU_A + y))
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


# ------------------------------------------- vectorized exp (src/vexp.h)
from mx_ops.ops.nn import _conv_cpu, _nn_cpu  # noqa: E402


@pytest.fixture(params=_nn_cpu.available_isas())
def isa(request):
    old = _nn_cpu.set_isa(request.param)
    yield request.param
    _nn_cpu.set_isa(old)


def _ulps(got, want):
    """Distance in units in the last place (sign-magnitude bit patterns)."""
    it = np.int32 if got.dtype == np.float32 else np.int64
    a, b = got.view(it).astype(np.int64), want.view(it).astype(np.int64)
    lo = np.iinfo(it).min
    a = np.where(a < 0, lo - a, a)
    b = np.where(b < 0, lo - b, b)
    return np.abs(a - b)


SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 0.5, -0.5]


def test_vexp_float32_within_one_ulp_over_the_range(isa):
    x = np.concatenate([np.linspace(-110, 100, 400_001, dtype=np.float32),
                        np.array(SPECIAL + [88.72283, 88.722839, 88.72284, -87.33654, -87.4,
                                            -103.9720, -103.97208, -104.0, -149.0], np.float32)])
    got = _nn_cpu.exp(x)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64)).astype(np.float32)    # correctly rounded here
        numpy = np.exp(x)
    ok = ~np.isnan(x)
    assert _ulps(got[ok], exact[ok]).max() <= 1
    # NumPy's own float32 exp strays up to a few ulp in the subnormal range:
    # ours stays within 1 ulp of it where it is exact, and is never further
    # from it than it is from the exact value, plus 1.
    assert (_ulps(got[ok], numpy[ok]) <= _ulps(numpy[ok], exact[ok]) + 1).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    assert got[x == np.inf][0] == np.inf and got[x == -np.inf][0] == 0.0
    assert got[x == -104.0][0] == 0.0 and 0 < got[x == -103.9720][0] < np.finfo(np.float32).tiny


def test_vexp_float64_within_two_ulp_over_the_range(isa):
    x = np.concatenate([np.linspace(-750, 712, 400_001),
                        np.array(SPECIAL + [709.782712893383, 709.7827128933841, -708.39641853,
                                            -720.0, -745.1332191019411, -745.14, -800.0])])
    got = _nn_cpu.exp(x)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.longdouble)).astype(np.float64)
    if np.finfo(np.longdouble).nmant <= 52:      # no wider type here: NumPy's exp itself
        with np.errstate(over="ignore"):
            exact = np.exp(x)
    ok = ~np.isnan(x)
    assert _ulps(got[ok], exact[ok]).max() <= 2
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    assert got[x == np.inf][0] == np.inf and got[x == -np.inf][0] == 0.0
    assert got[x == -800.0][0] == 0.0 and got[x == 709.7827128933841][0] == np.inf


# ------------------------------------- vectorized tanh and sigmoid (src/vexp.h)
def _float32_sweep():
    """Every 1021st float32 bit pattern (both signs, zero to inf: subnormals,
    the polynomial / exp switch of tanh at 0.625, the saturation of both),
    plus specials and the switch's neighbours; nan left out."""
    x = np.arange(0, 2**32, 1021, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([0.625, 9.0, 44.0, 88.8, 103.0, 104.0, 1e-45, 1.1754942e-38], np.float32)
    near = np.concatenate([np.nextafter(edges, np.float32(0)), edges,
                           np.nextafter(edges, np.float32(np.inf))])
    x = np.concatenate([x, near, -near, np.array(SPECIAL, np.float32)])
    return x[~np.isnan(x)]


def _float64_sweep():
    tiny = np.geomspace(1e-308, 40.0, 200_001)
    return np.concatenate([np.linspace(-40, 40, 400_001), tiny, -tiny,
                           np.nextafter(0.625, [0.0, 1.0]), [-0.625, 0.625, 19.1, 355.0, 710.0],
                           np.array(SPECIAL)[~np.isnan(SPECIAL)]])


def _sigmoid_exact(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("name,ref,ulp32,ulp64", [("tanh", np.tanh, 2, 2),
                                                  ("sigmoid", _sigmoid_exact, 3, 3)])
def test_vtanh_vsigmoid_within_a_few_ulp_over_the_range(isa, name, ref, ulp32, ulp64):
    """Against the float64 (float32) / long double (float64) result, rounded."""
    f = getattr(_nn_cpu, name)
    x = _float32_sweep()
    with np.errstate(over="ignore"):
        exact = ref(x.astype(np.float64)).astype(np.float32)
    assert _ulps(f(x), exact).max() <= ulp32
    x = _float64_sweep()
    with np.errstate(over="ignore"):
        exact = ref(x.astype(np.longdouble)).astype(np.float64)
    if np.finfo(np.longdouble).nmant <= 52:      # no wider type here: NumPy's float64 itself
        with np.errstate(over="ignore"):
            exact = ref(x)
    assert _ulps(f(x), exact).max() <= ulp64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vtanh_vsigmoid_specials(isa, dtype):
    info = np.finfo(dtype)
    sub = np.array([info.smallest_subnormal, -info.smallest_subnormal, info.tiny / 3], dtype)
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e4, -1e4], dtype)
    t, s = _nn_cpu.tanh(x), _nn_cpu.sigmoid(x)
    assert np.isnan(t[0]) and np.isnan(s[0])
    np.testing.assert_array_equal(t[1:], [1, -1, 0, 0, 1, -1])
    assert not np.signbit(t[3]) and np.signbit(t[4])                # tanh(-0.0) is -0.0
    np.testing.assert_array_equal(s[1:], [1, 0, 0.5, 0.5, 1, 0])
    np.testing.assert_array_equal(_nn_cpu.tanh(sub), sub)           # tanh(x) = x this close to 0
    np.testing.assert_array_equal(_nn_cpu.sigmoid(sub), [0.5, 0.5, 0.5])
    # Far below 0, sigmoid(x) = exp(x), down to the subnormals (not 1 / inf = 0).
    lo = np.array([-80.0, -95.0, -700.0 if dtype == "float64" else -100.0], dtype)
    got = _nn_cpu.sigmoid(lo)
    assert (got > 0).all()
    assert _ulps(got, np.exp(lo.astype(np.longdouble)).astype(dtype)).max() <= 3


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["Activation", "unary"])
@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_vector_tanh_sigmoid_ops_large_arrays_every_req(isa, threads, dtype, op, act):
    """Activation and the unary tanh / sigmoid ops on arrays split across
    threads with a ragged last chunk (the float16 and req 'add' paths go
    through a buffer), each instruction set, req write, inplace and add."""
    from mx_ops.ops.elemwise import _elemwise_cpu
    old_e = _elemwise_cpu.set_isa(isa)
    old_t = _conv_cpu.set_max_threads(threads)
    try:
        rng = np.random.default_rng(3)
        x = (rng.standard_normal(300_007) * 4).astype(dtype)
        x[:4] = [0.0, -0.0, 30.0, -30.0]
        want = ACT[act](x.astype(np.float64))
        tol = {"float16": 1e-3, "float32": 3e-7, "float64": 1e-15}[dtype]
        call = ((lambda **kw: invoke("Activation", [x], act_type=act, **kw)) if op == "Activation"
                else (lambda **kw: invoke(act, [x], **kw)))
        np.testing.assert_allclose(call().astype(np.float64), want, rtol=tol, atol=tol)
        base = rng.standard_normal(x.shape).astype(dtype)
        out = base.copy()
        call(out=out, req="add")
        np.testing.assert_allclose(out.astype(np.float64), base.astype(np.float64) + want,
                                   rtol=2 * tol, atol=8 * tol)
        y = x.copy()
        if op == "Activation":
            invoke("Activation", [y], out=y, req="inplace", act_type=act)
        else:
            invoke(act, [y], out=y, req="inplace")
        np.testing.assert_array_equal(y, call())
    finally:
        _conv_cpu.set_max_threads(old_t)
        _elemwise_cpu.set_isa(old_e)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_long_rows_and_lane_blocks(isa, threads, dtype, name):
    """Rows split across threads: contiguous rows (inner 1) and blocks of
    neighbouring rows (inner 33, and 600 > 256 lanes: a ragged second
    block), req write and add, a temperature, forward and backward."""
    rng = np.random.default_rng(21)
    log = name == "log_softmax"
    old = _conv_cpu.set_max_threads(threads)
    tol = {"float16": 3e-3, "float32": 2e-6, "float64": 1e-13}[dtype]
    try:
        for shape, axis, t in [((300, 1025), -1, None), ((5, 301, 33), 1, 0.7),
                               ((2, 40, 600), 1, None)]:
            x = (rng.standard_normal(shape) * 5).astype(dtype)
            params = dict(axis=axis) if t is None else dict(axis=axis, temperature=t)
            want = _softmax_ref(x.astype(np.float64), axis, t or 1.0, log)
            got = invoke(name, [x], **params)
            scale = np.abs(want) + (0 if log else 1e-3)
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol * 4,
                                       atol=tol * scale.max())
            base = rng.standard_normal(shape).astype(dtype)
            out = base.copy()
            invoke(name, [x], out=out, req="add", **params)
            np.testing.assert_allclose(out.astype(np.float64),
                                       base.astype(np.float64) + got.astype(np.float64),
                                       rtol=tol * 4, atol=tol * 4 * (1 + np.abs(want).max()))
            og = rng.standard_normal(shape).astype(dtype)
            yd, ogd = got.astype(np.float64), og.astype(np.float64)
            if log:
                wantg = (ogd - np.exp(yd) * ogd.sum(axis, keepdims=True)) / (t or 1.0)
            else:
                wantg = yd * (ogd - (ogd * yd).sum(axis, keepdims=True)) / (t or 1.0)
            dx = invoke(f"_backward_{name}", [og, got], **params)
            np.testing.assert_allclose(dx.astype(np.float64), wantg, rtol=tol * 8,
                                       atol=tol * 8 * (1 + np.abs(wantg).max()))
    finally:
        _conv_cpu.set_max_threads(old)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_masks_infinities_and_nans_like_numpy(isa, dtype):
    """-inf entries get probability 0 (masking); a row holding +inf, nan or
    only -inf is nan throughout, as NumPy's exp(x - max) / sum gives."""
    x = np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf] * 4, [0.0, np.inf, 1.0, 2.0],
                  [0.0, np.nan, 1.0, 2.0], [-200.0, 0.0, -90.0, -1e4]], dtype)
    # Values below the dtype's normal range are compared absolutely.
    tol = dict(rtol=3e-3 if dtype == "float16" else 1e-6, atol=float(np.finfo(dtype).tiny))
    with np.errstate(invalid="ignore"):
        want = _softmax_ref(x.astype(np.float64), -1, 1.0, False)
        wantl = _softmax_ref(x.astype(np.float64), -1, 1.0, True)
    for xx, w, name in ((x, want, "softmax"), (x, wantl, "log_softmax")):
        got = invoke(name, [xx]).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(w))
        ok = ~np.isnan(w)
        np.testing.assert_allclose(got[ok], w[ok], **tol)
    xt = np.ascontiguousarray(x.T)                       # the same along axis 0: lane blocks
    got = invoke("softmax", [xt], axis=0).astype(np.float64).T
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], **tol)


# ------------------------- the sum-only exp of softmax's sums (src/vexp.h)
TEMPERATURES = [1.0, 0.5, 2.0, -1.0, -0.3]


def _scaled_t(x, shift, t):
    """(x - shift) * (1 / t) rounded as the kernel rounds it: in the compute
    type (float32 for float16), the scale rounded first."""
    acc = np.float64 if x.dtype == np.float64 else np.float32
    return (x.astype(acc) - acc(shift)) * acc(1.0 / t)


@pytest.mark.parametrize("t", TEMPERATURES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_exp_terms_within_one_ulp(isa, dtype, t):
    """Each term on its own: rows of one element (the scalar tail) and of 16
    copies (one per running sum: the sum is 16 times the term, exactly),
    exponents from 0 down to -126 ln2 (float32: below, terms are not
    exp's but under 2^-126, which a sum holding exp(0) = 1 absorbs).
    Within 1 ulp of float64's exp rounded to float32 (float64: 2 ulp of
    the long double exp, as exp itself)."""
    lo = -87.33654 if dtype != "float64" else -708.0
    u = np.linspace(0.0, -lo * abs(t), 20_001)
    shift = 3.0
    x = (shift - u if t > 0 else shift + u).astype(dtype)
    x = x[_scaled_t(x, shift, t) >= lo]
    want_t = _scaled_t(x, shift, t)
    if dtype == "float64":
        exact = np.exp(want_t.astype(np.longdouble)).astype(np.float64)
    else:
        exact = np.exp(want_t.astype(np.float64)).astype(np.float32)
    one = _nn_cpu.sum_exp(x[:, None], shift, 1.0 / t)
    sixteen = _nn_cpu.sum_exp(np.repeat(x[:, None], 16, axis=1), shift, 1.0 / t)
    ulp = 2 if dtype == "float64" else 1
    assert _ulps(one, exact).max() <= ulp
    assert _ulps(sixteen / 16, exact).max() <= ulp


def _huge(dtype):
    return 1e4 if dtype == "float16" else 1e30


def _sum_rows(rng, dtype, t):
    """Rows of 1 to 1025 elements (the 16 running sums' tails, the float16
    widening's 256-element chunks), rows with -inf entries (+inf for t < 0)
    and rows of +-1e30 (float16: +-1e4), with their shifts: the maximum for
    t > 0, the minimum for t < 0."""
    rows = []
    for n in [1, 2, 15, 16, 17, 255, 256, 257, 1000, 1025]:
        for spread in [0.5, 4.0, 30.0]:
            rows.append(rng.uniform(-spread, spread, n) * abs(t) + rng.uniform(-50, 50))
    masked = rng.standard_normal(300) * 3
    masked[::3] = -np.inf if t > 0 else np.inf
    huge = rng.choice([-1.0, 1.0], 40) * _huge(dtype)
    rows += [masked, huge, np.array([-np.inf, 1.0, 2.0]) * np.sign(t)]
    rows = [r.astype(dtype) for r in rows]
    shifts = [(r.max() if t > 0 else r.min()) for r in rows]
    return rows, shifts


@pytest.mark.parametrize("t", TEMPERATURES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_exp_rows_against_float64(isa, dtype, t):
    """Whole rows' sums against float64 sums of the same exponents (each
    term's accuracy is the test above; this one checks the sums: tails,
    float16 chunks, masked entries): float32 sums of up to 1025 terms in
    16 running sums stay within 3e-7 (measured: up to 1.7e-7 on each
    instruction set, float64 4.3e-16).  -inf (for t < 0, +inf) entries
    add 0; an empty row sums to 0."""
    rng = np.random.default_rng(int(t * 10) % 97)
    rows, shifts = _sum_rows(rng, dtype, t)
    for r, s in zip(rows, shifts):
        got = _nn_cpu.sum_exp(r[None], s, 1.0 / t)[0]
        with np.errstate(invalid="ignore"):
            want = np.exp(_scaled_t(r, s, t).astype(np.float64)).sum()
        rtol = 2e-15 if dtype == "float64" else 3e-7
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"row of {r.size}")
    assert _nn_cpu.sum_exp(np.zeros((3, 0), dtype), 0.0, 1.0 / t).tolist() == [0, 0, 0]
    # A nan entry, or an inf one that is the shift, makes the sum nan, as
    # exp(inf - inf) does.
    bad = (np.array([[0.0, np.inf, 1.0], [0.0, np.nan, 1.0]]) * np.sign(t)).astype(dtype)
    shift = np.array([np.inf, 1.0]) * np.sign(t)
    assert np.isnan(_nn_cpu.sum_exp(bad, shift, 1.0 / t)).all()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("t", TEMPERATURES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_temperatures_every_path(isa, threads, dtype, t, name):
    """softmax, log_softmax and softmin at temperatures above, below and
    under 0 (softmin negates it): contiguous rows and lane blocks, req
    write and add (float16 and add take the sum-only exp, then exp again),
    -inf entries and +-1e30 rows (float16: +-1e4), against NumPy in
    float64."""
    rng = np.random.default_rng(31)
    log = name == "log_softmax"
    tol = {"float16": 3e-3, "float32": 2e-6, "float64": 1e-13}[dtype]
    old = _conv_cpu.set_max_threads(threads)
    try:
        for shape, axis in [((37, 1000), -1), ((3, 300, 40), 1)]:
            # softmax(sign * x / |t|): masked entries are -inf there.
            sign = np.sign(t) * (-1 if name == "softmin" else 1)
            x = rng.standard_normal(shape) * 5
            x.reshape(-1)[::7] = -np.inf * sign
            x[1] = rng.choice([-1.0, 1.0], x[1].shape) * _huge(dtype)
            x = x.astype(dtype)
            with np.errstate(invalid="ignore"):
                want = _softmax_ref(sign * x.astype(np.float64), axis, abs(t), log)
            got = invoke(name, [x], axis=axis, temperature=t).astype(np.float64)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            with np.errstate(over="ignore"):     # float16: -1e4 / 0.3 is -inf
                ok = np.isfinite(want.astype(dtype))
                np.testing.assert_array_equal(got[~ok], want[~ok].astype(dtype))
            # log_softmax's z - log(sum) adds two terms <= 0: no cancellation.
            np.testing.assert_allclose(got[ok], want[ok], rtol=tol * 4,
                                       atol=tol * (1 if log else 1e-3))
            base = rng.standard_normal(shape).astype(dtype)
            out = base.copy()
            invoke(name, [x], axis=axis, temperature=t, out=out, req="add")
            added = out.astype(np.float64) - base.astype(np.float64)
            np.testing.assert_allclose(added[ok], want[ok], rtol=tol * 4,
                                       atol=tol * 4 * (1 + np.abs(base).max()))
    finally:
        _conv_cpu.set_max_threads(old)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_numerators_below_the_float_range_are_exactly_zero(isa, dtype):
    """softmax keeps its exponents (vexp_shift_sum_below): float32 terms of
    exponent under -126 ln2 (-87.34) are 0, not exp's subnormals (under
    1.2e-38 of a sum >= 1), and the others exp's within 1 ulp; float64 keeps
    them all.  The same for softmax_cross_entropy's gradient, which is
    softmax minus the label's one."""
    row = np.array([0.0, -1.0, -80.0, -87.0, -87.5, -90.0, -100.0, -1e30, -np.inf])
    x = np.tile(row, (4, 1)).astype(dtype)
    x[1] += 5.0                                   # the shift is each row's max
    x[2] = x[2][::-1]                             # and anywhere in the row
    got = invoke("softmax", [x], axis=-1)
    want = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    below = (x.astype(np.float64) - x.max(axis=1, keepdims=True)) < -87.33654
    if dtype == "float32":
        assert (got[below] == 0).all()
        keep = ~below
    else:                                         # exp(-90) is a normal double
        keep = want > 0
        assert (got[~keep] == 0).all() and (got[below & keep] > 0).all()
    np.testing.assert_allclose(got[keep], want[keep], rtol=4e-7 if dtype == "float32" else 1e-15)
    label = np.array([1, 0, 8, 1], dtype)         # the label's entry gets softmax - 1
    grad = invoke("_backward_softmax_cross_entropy", [np.ones((1,), dtype), x, label])[0]
    onehot = np.zeros_like(want)
    onehot[np.arange(4), label.astype(int)] = 1
    np.testing.assert_allclose(grad[keep], (want - onehot)[keep], rtol=1e-6, atol=1e-300)
    if dtype == "float32":
        assert (grad[below & (onehot == 0)] == 0).all()
