"""BatchNorm and _backward_BatchNorm against a NumPy reference of MXNet's
formulas (training, inference, use_global_stats, fix_gamma, every axis,
float16 data with float32 statistics), the moving-statistics update, every
req, central finite differences in float64, and errors."""
import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.core import training
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DTYPES = ["float16", "float32", "float64"]
TOL = {"float16": 3e-2, "float32": 2e-5, "float64": 1e-11}


def _pdt(dtype):
    return "float32" if dtype == "float16" else dtype


def _inputs(rng, shape, axis, dtype, offset=0.0):
    c = shape[axis]
    x = (rng.standard_normal(shape) * 2 + offset).astype(dtype)
    p = _pdt(dtype)
    gamma = rng.uniform(0.5, 1.5, c).astype(p)
    beta = rng.standard_normal(c).astype(p)
    mm = rng.standard_normal(c).astype(p)
    mv = rng.uniform(0.5, 2.0, c).astype(p)
    return x, gamma, beta, mm, mv


def _view(x, axis):
    """(channel axis index, reduction axes, broadcast shape of a channel vector)."""
    ax = axis % x.ndim
    shape = [1] * x.ndim
    shape[ax] = -1
    return ax, tuple(i for i in range(x.ndim) if i != ax), shape


def bn_ref(x, gamma, beta, mm, mv, eps=1e-3, momentum=0.9, fix_gamma=True,
           use_global_stats=False, axis=1, train=False):
    """(output, mean, invstd, new moving_mean, new moving_var) in float64."""
    x = x.astype(np.float64)
    _, red, shape = _view(x, axis)
    m = float(np.float32(momentum))
    mm, mv = mm.astype(np.float64), mv.astype(np.float64)
    if train and not use_global_stats:
        mean, var = x.mean(axis=red), x.var(axis=red)
        invstd = 1 / np.sqrt(var + eps)
        new_mm, new_mv = mm * m + mean * (1 - m), mv * m + var * (1 - m)
    else:
        mean, invstd = mm, 1 / np.sqrt(mv + eps)
        new_mm, new_mv = mm, mv
    g = np.ones_like(mean) if fix_gamma else gamma.astype(np.float64)
    y = (x - mean.reshape(shape)) * (invstd * g).reshape(shape) + beta.reshape(shape)
    return y, mean, invstd, new_mm, new_mv


def bn_grad_ref(dy, x, gamma, mean, invstd, fix_gamma=True, axis=1, batch=True):
    """(data_grad, gamma_grad, beta_grad) in float64."""
    dy, x = dy.astype(np.float64), x.astype(np.float64)
    _, red, shape = _view(x, axis)
    g = np.ones_like(mean) if fix_gamma else gamma.astype(np.float64)
    xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
    sg = dy.sum(axis=red)
    dotp = (dy * (x - mean.reshape(shape))).sum(axis=red)
    if batch:
        n = x.size / x.shape[_view(x, axis)[0]]
        dx = (dy - (sg / n).reshape(shape) - xhat * (dotp * invstd / n).reshape(shape)) \
            * (invstd * g).reshape(shape)
    else:
        dx = dy * (invstd * g).reshape(shape)
    dgamma = np.zeros_like(sg) if fix_gamma else dotp * invstd
    return dx, dgamma, sg


CASES = [  # shape, axis
    ((4, 3, 5, 6), 1),
    ((2, 5, 7), -1),
    ((6, 4), 0),
    ((3, 4), 1),
    ((2, 3, 4, 5), 2),
    ((5,), 0),
    ((2, 3, 1, 1), -3),
]


@pytest.mark.parametrize("fix_gamma", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_training_forward_and_moving_stats(dtype, case, fix_gamma):
    shape, axis = CASES[case]
    rng = np.random.default_rng(case)
    x, gamma, beta, mm, mv = _inputs(rng, shape, axis, dtype)
    kw = dict(axis=axis, fix_gamma=fix_gamma, eps=1e-3, momentum=0.9)
    y_ref, mean, invstd, new_mm, new_mv = bn_ref(x, gamma, beta, mm, mv, train=True, **kw)
    mm0, mv0 = mm.copy(), mv.copy()
    with training.train_mode():
        y, m_out, v_out = invoke("BatchNorm", [x, gamma, beta, mm, mv], **kw)
    tol = TOL[dtype]
    assert y.dtype == np.dtype(dtype) and m_out.dtype == np.dtype(_pdt(dtype))
    np.testing.assert_allclose(y.astype(np.float64), y_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(m_out, mean, rtol=tol, atol=tol)
    # MXNet's 'var' output is the inverse standard deviation.
    np.testing.assert_allclose(v_out, invstd, rtol=tol, atol=tol)
    ptol = 1e-6 if _pdt(dtype) == "float32" else 1e-12
    np.testing.assert_allclose(mm, new_mm, rtol=ptol, atol=ptol)
    np.testing.assert_allclose(mv, new_mv, rtol=ptol, atol=ptol)
    assert not np.array_equal(mm, mm0) and not np.array_equal(mv, mv0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_inference_uses_moving_stats_and_leaves_them(dtype, case):
    shape, axis = CASES[case]
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(10 + case), shape, axis, dtype)
    mm0, mv0 = mm.copy(), mv.copy()
    for fix_gamma in (True, False):
        y_ref, mean, invstd, _, _ = bn_ref(x, gamma, beta, mm, mv, axis=axis,
                                           fix_gamma=fix_gamma)
        y, m_out, v_out = invoke("BatchNorm", [x, gamma, beta, mm, mv], axis=axis,
                                 fix_gamma=fix_gamma)
        np.testing.assert_allclose(y.astype(np.float64), y_ref, rtol=TOL[dtype],
                                   atol=TOL[dtype])
        np.testing.assert_allclose(m_out, mean, rtol=1e-6)
        np.testing.assert_allclose(v_out, invstd, rtol=1e-6)
    np.testing.assert_array_equal(mm, mm0)
    np.testing.assert_array_equal(mv, mv0)


def test_use_global_stats_in_training_is_inference():
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(3), (4, 3, 5), 1, "float64")
    mm0, mv0 = mm.copy(), mv.copy()
    y_ref = bn_ref(x, gamma, beta, mm, mv, fix_gamma=False)[0]
    with training.train_mode():
        y = invoke("BatchNorm", [x, gamma, beta, mm, mv], use_global_stats=True,
                   fix_gamma=False)[0]
    np.testing.assert_allclose(y, y_ref, rtol=1e-12)
    np.testing.assert_array_equal(mm, mm0)
    np.testing.assert_array_equal(mv, mv0)


def test_eps_and_momentum_and_repeated_training_calls():
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(4), (8, 2, 3), 1, "float64")
    kw = dict(eps=1e-5, momentum=0.7, fix_gamma=False)
    want_mm, want_mv = mm.copy(), mv.copy()
    for _ in range(3):
        y_ref, _, _, want_mm, want_mv = bn_ref(x, gamma, beta, want_mm, want_mv, train=True,
                                               **kw)
        with training.train_mode():
            y = invoke("BatchNorm", [x, gamma, beta, mm, mv], **kw)[0]
        np.testing.assert_allclose(y, y_ref, rtol=1e-12)
    np.testing.assert_allclose(mm, want_mm, rtol=1e-12)
    np.testing.assert_allclose(mv, want_mv, rtol=1e-12)


def test_large_offset_statistics_are_accurate():
    # Mean 1e4 with unit spread in float32: a float32 sum of x^2 would lose
    # the variance entirely; the double two-pass sums keep it.
    rng = np.random.default_rng(5)
    x, gamma, beta, mm, mv = _inputs(rng, (64, 4, 32, 32), 1, "float32", offset=1e4)
    with training.train_mode():
        y, mean, invstd = invoke("BatchNorm", [x, gamma, beta, mm, mv], fix_gamma=False)
    _, mean_ref, invstd_ref, _, _ = bn_ref(x, gamma, beta, mm, mv, train=True)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-7)
    np.testing.assert_allclose(invstd, invstd_ref, rtol=1e-5)


@pytest.mark.parametrize("shape, axis", [((16, 32, 24, 24), 1), ((4096, 40), -1),
                                         ((2, 3, 65536), 1), ((1, 300000), 0)])
def test_large_arrays_on_every_reduction_path(shape, axis):
    # Above the parallel threshold: blocks of channels, channels-last rows,
    # few long rows, and one channel per row.
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(6), shape, axis, "float32")
    with training.train_mode():
        y, mean, invstd = invoke("BatchNorm", [x, gamma, beta, mm, mv], axis=axis,
                                 fix_gamma=False)
    y_ref, mean_ref, invstd_ref, _, _ = bn_ref(x, gamma, beta, mm, mv, axis=axis,
                                               fix_gamma=False, train=True)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(invstd, invstd_ref, rtol=1e-5)
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=1e-4)
    og = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    with training.train_mode():
        grads = invoke("_backward_BatchNorm", [og, mean, invstd, x, gamma, beta, mm, mv],
                       axis=axis, fix_gamma=False)
    for g, w in zip(grads, bn_grad_ref(og, x, gamma, mean_ref, invstd_ref, fix_gamma=False,
                                       axis=axis)):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3 * np.abs(w).max())


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])    # check_reqs: one dtype for all
def test_forward_reqs(nn, dtype, train):
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(8), (3, 4, 5), 1, dtype)
    y, mean, invstd, _, _ = bn_ref(x, gamma, beta, mm, mv, fix_gamma=False, train=train)
    with training.train_mode() if train else training.predict_mode():
        nn.check_reqs("BatchNorm", [x, gamma, beta, mm, mv], [y, mean, invstd],
                      dict(fix_gamma=False), dtype)


@pytest.mark.parametrize("fix_gamma", [True, False])
@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [0, 1, 2, 4])
def test_backward_matches_numpy_every_req(nn, dtype, case, batch, fix_gamma):
    shape, axis = CASES[case]
    rng = np.random.default_rng(20 + case)
    x, gamma, beta, mm, mv = _inputs(rng, shape, axis, dtype)
    _, mean, invstd, _, _ = bn_ref(x, gamma, beta, mm, mv, axis=axis, train=True)
    p = _pdt(dtype)
    og = rng.standard_normal(shape).astype(dtype)
    saved = [mean.astype(p), invstd.astype(p)]
    if batch:
        want = bn_grad_ref(og, x, gamma, saved[0].astype(np.float64),
                           saved[1].astype(np.float64), fix_gamma, axis)
    else:
        want = bn_grad_ref(og, x, gamma, mm.astype(np.float64),
                           1 / np.sqrt(mv.astype(np.float64) + 1e-3), fix_gamma, axis, False)
    tol = dict(TOL, float16=5e-2)[dtype]
    mode = training.train_mode() if batch else training.predict_mode()
    inputs = [og, *saved, x, gamma, beta, mm, mv]
    with mode:
        got = invoke("_backward_BatchNorm", inputs, axis=axis, fix_gamma=fix_gamma)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol,
                                       atol=tol * max(1.0, np.abs(w).max()))
        if dtype != "float16":
            nn.check_reqs("_backward_BatchNorm", inputs, want,
                          dict(axis=axis, fix_gamma=fix_gamma), dtype)


def test_backward_global_stats_ignores_training_and_saved_stats():
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(9), (3, 2, 4), 1, "float64")
    og = np.random.default_rng(10).standard_normal(x.shape)
    junk = np.full(2, 123.0)
    want = bn_grad_ref(og, x, gamma, mm, 1 / np.sqrt(mv + 1e-3), False, 1, False)
    with training.train_mode():
        got = invoke("_backward_BatchNorm", [og, junk, junk, x, gamma, beta, mm, mv],
                     fix_gamma=False, use_global_stats=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize("fix_gamma", [True, False])
@pytest.mark.parametrize("shape, axis", [((3, 2, 2), 1), ((4, 3), -1), ((2, 2, 3), 2)])
def test_finite_differences_training(shape, axis, fix_gamma):
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(11), shape, axis, "float64")
    with training.train_mode():
        check_numeric_gradient("BatchNorm", [x, gamma, beta, mm, mv], rtol=1e-5, atol=1e-7,
                               axis=axis, fix_gamma=fix_gamma, eps=1e-3)


@pytest.mark.parametrize("fix_gamma", [True, False])
@pytest.mark.parametrize("train", [True, False])
def test_finite_differences_global_stats(train, fix_gamma):
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(12), (3, 2, 3), 1, "float64")
    mode = training.train_mode() if train else training.predict_mode()
    with mode:
        check_numeric_gradient("BatchNorm", [x, gamma, beta, mm, mv], rtol=1e-6, atol=1e-8,
                               use_global_stats=train, fix_gamma=fix_gamma)


def test_gradient_maker_blocks_aux_states():
    from mx_ops.core.gradient import grad_entries
    from mx_ops.core.node import make_node, variable
    node = make_node("BatchNorm", [variable(n) for n in "abcde"])
    grads = grad_entries(node, [variable("g").outputs()[0]] * 3)
    assert [g is None for g in grads] == [False, False, False, True, True]
    back = grads[0].node
    assert back.op.name == "_backward_BatchNorm" and len(back.inputs) == 8
    assert [e.index for e in back.inputs[1:3]] == [1, 2] and back.inputs[1].node is node


def test_float16_data_with_float32_statistics():
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(13), (4, 3, 6), 1, "float16")
    with training.train_mode():
        y, mean, invstd = invoke("BatchNorm", [x, gamma, beta, mm, mv], fix_gamma=False)
    assert (y.dtype, mean.dtype, invstd.dtype, mm.dtype) == (np.float16, np.float32,
                                                              np.float32, np.float32)
    with pytest.raises(TypeInferenceError, match="BatchNorm: argument 'gamma' has dtype "
                                                 "float16; for 'data' of dtype float16 it "
                                                 "must be float32"):
        invoke("BatchNorm", [x, gamma.astype(np.float16), beta, mm, mv])


def test_visible_outputs_and_aux_states_are_declared():
    from mx_ops import registry
    op = registry.get("BatchNorm")
    params = op.parse_params({})
    assert op.visible_output_count(params) == 1
    assert op.visible_output_count(op.parse_params({"output_mean_var": True})) == 3
    assert op.mutated_inputs(params) == (3, 4)
    assert op.aux_states == ("moving_mean", "moving_var")
    assert op.output_names(params) == ["output", "mean", "var"]
    assert params == {"eps": 1e-3, "momentum": 0.9, "fix_gamma": True,
                      "use_global_stats": False, "output_mean_var": False, "axis": 1,
                      "cudnn_off": False, "min_calib_range": None, "max_calib_range": None}
    # MXNet's -symbol.json strings parse, the calibration range included.
    op.parse_params({"eps": "1e-05", "fix_gamma": "False", "min_calib_range": "-1.5",
                     "max_calib_range": "2.0", "cudnn_off": "True"})


def test_bad_inputs_raise_clear_errors():
    x, gamma, beta, mm, mv = _inputs(np.random.default_rng(14), (2, 3, 4), 1, "float32")
    with pytest.raises(ShapeError, match=r"BatchNorm: argument 'axis' is 3, out of range for "
                                         r"'data' of shape \(2, 3, 4\)"):
        invoke("BatchNorm", [x, gamma, beta, mm, mv], axis=3)
    with pytest.raises(ShapeError, match=r"BatchNorm: argument 'beta' has shape \(4,\); for "
                                         r"'data' of shape \(2, 3, 4\) it must be \(3,\)"):
        invoke("BatchNorm", [x, gamma, np.zeros(4, np.float32), mm, mv])
    with pytest.raises(ShapeError, match=r"BatchNorm: argument 'moving_var' has shape \(3, 1\)"):
        invoke("BatchNorm", [x, gamma, beta, mm, mv.reshape(3, 1)])
    with pytest.raises(ShapeError, match="at least one dimension"):
        invoke("BatchNorm", [np.float32(1.0), gamma[:1], beta[:1], mm[:1], mv[:1]])
    with pytest.raises(TypeInferenceError, match="BatchNorm: argument 'data' has dtype int32"):
        invoke("BatchNorm", [x.astype(np.int32), gamma, beta, mm, mv])
    with pytest.raises(TypeInferenceError, match="argument 'moving_mean' has dtype float64; "
                                                 "for 'data' of dtype float32 it must be "
                                                 "float32"):
        invoke("BatchNorm", [x, gamma, beta, mm.astype(np.float64), mv])
    with pytest.raises(ShapeError, match=r"_backward_BatchNorm: argument 'out_grad' has shape "
                                         r"\(2, 3\), which differs from 'data' \(2, 3, 4\)"):
        invoke("_backward_BatchNorm", [np.zeros((2, 3), np.float32), mm, mv, x, gamma, beta,
                                       mm, mv])
    with pytest.raises(ValueError, match="'moving_mean' is written in place"):
        invoke("BatchNorm", [x, gamma, beta, list(mm), mv])
    with pytest.raises(Exception, match="BatchNorm: argument 'eps'"):
        invoke("BatchNorm", [x, gamma, beta, mm, mv], eps=-1.0)
