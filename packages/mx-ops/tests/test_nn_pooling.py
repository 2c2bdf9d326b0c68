"""Pooling and _backward_Pooling against a NumPy reference of MXNet's
windows (src/operator/nn/pool.h), and finite differences."""
import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.core.registry import ShapeError


def _out_size(x, k, s, p, full):
    return 1 + (-(-(x + 2 * p - k) // s) if full else (x + 2 * p - k) // s)


def _ref(x, kernel, stride, pad, pool_type, full=False, include_pad=True, og=None):
    """Forward output, or with ``og`` the input gradient, of 2-D pooling on NCHW."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    oh, ow = _out_size(h, kh, sh, ph, full), _out_size(w, kw, sw, pw, full)
    out = np.zeros((n, c, oh, ow))
    dx = np.zeros(x.shape)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - ph, j * sw - pw
            h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            if not include_pad:
                size = (h1 - h0) * (w1 - w0)
            win = x[:, :, h0:h1, w0:w1].reshape(n, c, -1)
            if pool_type == "max":
                out[:, :, i, j] = win.max(-1)
                if og is not None:
                    idx = win.argmax(-1)
                    for a in range(n):
                        for b in range(c):
                            r, q = divmod(idx[a, b], w1 - w0)
                            dx[a, b, h0 + r, w0 + q] += og[a, b, i, j]
            else:
                div = size if pool_type == "avg" else 1
                out[:, :, i, j] = win.sum(-1) / div
                if og is not None:
                    dx[:, :, h0:h1, w0:w1] += (og[:, :, i, j] / div)[:, :, None, None]
    return out if og is None else dx


CASES = [  # (shape, kernel, stride, pad, convention)
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 0), "valid"),
    ((1, 2, 8, 8), (2, 2), (2, 2), (0, 0), "valid"),
    ((2, 2, 7, 5), (3, 3), (2, 2), (1, 1), "full"),
    ((1, 1, 5, 5), (5, 5), (1, 1), (0, 0), "valid"),
    ((3, 2, 9), (3,), (2,), (1,), "valid"),
    ((2, 1, 10), (4,), (3,), (0,), "full"),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_backward(nn, dtype, pool_type, case):
    shape, kernel, stride, pad, conv = CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    params = dict(kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                  pooling_convention=conv)
    one_d = len(shape) == 3
    x4 = x.astype(np.float64)[:, :, None] if one_d else x.astype(np.float64)
    k2, s2, p2 = ((1,) + kernel, (1,) + stride, (0,) + pad) if one_d else (kernel, stride, pad)
    want = _ref(x4, k2, s2, p2, pool_type, conv == "full")
    want = want[:, :, 0] if one_d else want
    nn.check_reqs("Pooling", [x], [want], params, dtype)
    y = invoke("Pooling", [x], **params)
    og = rng.standard_normal(y.shape).astype(dtype)
    og4 = og.astype(np.float64)[:, :, None] if one_d else og.astype(np.float64)
    dx = _ref(x4, k2, s2, p2, pool_type, conv == "full", og=og4)
    dx = dx[:, :, 0] if one_d else dx
    nn.check_reqs("_backward_Pooling", [og, x, y], [dx], params, dtype)
    if dtype == "float64":
        num = nn.numeric_grad(lambda v: invoke("Pooling", [v], **params), x, og)
        np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-8)


def test_avg_count_include_pad():
    x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    base = dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg")
    np.testing.assert_allclose(invoke("Pooling", [x], **base),
                               _ref(x, (3, 3), (1, 1), (1, 1), "avg"))
    # corner: (0 + 1 + 4 + 5) / 9 by default, / 4 without the padding
    assert invoke("Pooling", [x], **base)[0, 0, 0, 0] == pytest.approx(10 / 9)
    assert invoke("Pooling", [x], count_include_pad=False, **base)[0, 0, 0, 0] == \
        pytest.approx(10 / 4)
    np.testing.assert_allclose(invoke("Pooling", [x], count_include_pad=False, **base),
                               _ref(x, (3, 3), (1, 1), (1, 1), "avg", include_pad=False))


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_global_pool(pool_type):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4))
    y = invoke("Pooling", [x], global_pool=True, pool_type=pool_type, kernel=(1, 1))
    f = {"max": np.max, "avg": np.mean, "sum": np.sum}[pool_type]
    np.testing.assert_allclose(y, f(x, axis=(2, 3), keepdims=True))
    assert invoke("Pooling", [x[:, :, 0]], global_pool=True).shape == (2, 3, 1)


def test_errors_name_argument_and_shapes():
    x = np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(ShapeError, match=r"Pooling: argument 'kernel' is \(2,\), which needs 2 "
                                         r"value\(s\) for 'data' of shape \(1, 2, 4, 4\)"):
        invoke("Pooling", [x], kernel=(2,))
    with pytest.raises(ShapeError, match=r"Pooling: argument 'kernel' \(5, 5\) exceeds 'data' "
                                         r"\(1, 2, 4, 4\)"):
        invoke("Pooling", [x], kernel=(5, 5))
    with pytest.raises(ShapeError, match="Pooling: argument 'data' must be 3-d"):
        invoke("Pooling", [np.ones((2, 2))], kernel=(2,))
    with pytest.raises(ShapeError, match="'lp' needs argument 'p_value' 1, 2 or 3"):
        invoke("Pooling", [x], kernel=(2, 2), pool_type="lp")
    with pytest.raises(ShapeError, match="_backward_Pooling: argument 'out_grad' has shape"):
        invoke("_backward_Pooling", [np.ones((1, 2, 3, 3), np.float32), x,
                                     np.ones((1, 2, 2, 2), np.float32)], kernel=(2, 2),
               stride=(2, 2))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 40, 24, 24), (2, 3, 7, 9)])
def test_max_2x2_stride_2_with_ties(nn, threads, dtype, shape):
    """The exact-tiling 2x2/2 max path (ops/nn/pool_cpu.h pool_max_2x2_*; 7x9
    falls back to the general loop) against the reference: small integers
    make ties common, where the first window position (row-major) takes the
    gradient; planes split over threads, every req."""
    from mx_ops.ops.nn import _conv_cpu
    old = _conv_cpu.set_max_threads(threads)
    try:
        rng = np.random.default_rng(11)
        x = rng.integers(-3, 3, shape).astype(dtype)
        params = dict(kernel=(2, 2), stride=(2, 2), pool_type="max")
        x64 = x.astype(np.float64)
        nn.check_reqs("Pooling", [x], [_ref(x64, (2, 2), (2, 2), (0, 0), "max")], params, dtype)
        y = invoke("Pooling", [x], **params)
        og = rng.standard_normal(y.shape).astype(dtype)
        dx = _ref(x64, (2, 2), (2, 2), (0, 0), "max", og=og.astype(np.float64))
        nn.check_reqs("_backward_Pooling", [og, x, y], [dx], params, dtype)
    finally:
        _conv_cpu.set_max_threads(old)
