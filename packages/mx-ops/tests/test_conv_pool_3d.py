"""3-D (NCDHW) Convolution, Deconvolution and Pooling, forward and backward,
against an N-D NumPy reference (one shifted slice per kernel tap for the
convolutions, direct windows for pooling), central finite differences and
MXNet 1.9.1's outputs (data/conv3d_mxnet191.npz, data/make_conv3d_reference.py)."""
import itertools
import json
import os

import numpy as np
import pytest

from mx_ops import get, infer_shapes, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError
from mx_ops.ops.nn import _conv_cpu
from mx_ops.test_utils import check_numeric_gradient


# ---------------------------------------------------------------- reference
def _geom(kw):
    k = tuple(kw["kernel"])
    one = (1,) * len(k)
    return (k, tuple(kw.get("stride", one)), tuple(kw.get("dilate", one)),
            tuple(kw.get("pad", (0,) * len(k))), kw.get("num_group", 1))


def _tap(t, out, s, d):
    """The padded-image slice that kernel tap t reads for every output."""
    return (slice(None), slice(None)) + tuple(
        slice(ti * di, ti * di + si * (oi - 1) + 1, si) for ti, oi, si, di in zip(t, out, s, d))


def _taps(k):
    return itertools.product(*(range(a) for a in k))


def _groups(g, a, b):
    """(slice of a's channels, slice of b's channels) per group."""
    return [(slice(q * a // g, (q + 1) * a // g), slice(q * b // g, (q + 1) * b // g))
            for q in range(g)]


def ref_fwd(x, w, b, kw):
    """Convolution: out (n, f, *o) = sum over taps of w[:, :, t] . image slice."""
    k, s, d, p, g = _geom(kw)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(a, a) for a in p])
    out = tuple((xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k)))
    y = np.zeros((x.shape[0], w.shape[0]) + out)
    for t in _taps(k):
        patch = xp[_tap(t, out, s, d)]
        for cs, fs in _groups(g, x.shape[1], w.shape[0]):
            y[:, fs] += np.einsum("nc...,fc->nf...", patch[:, cs], w[(fs, slice(None)) + t])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * len(k))
    return y


def ref_dgrad(dy, w, shape, kw):
    """The adjoint of ref_fwd in the image: an image of `shape`."""
    k, s, d, p, g = _geom(kw)
    dxp = np.zeros(shape[:2] + tuple(a + 2 * b for a, b in zip(shape[2:], p)))
    out = dy.shape[2:]
    for t in _taps(k):
        view = dxp[_tap(t, out, s, d)]
        for cs, fs in _groups(g, shape[1], w.shape[0]):
            view[:, cs] += np.einsum("nf...,fc->nc...", dy[:, fs], w[(fs, slice(None)) + t])
    return dxp[(slice(None), slice(None)) + tuple(slice(a, a + n) for a, n in zip(p, shape[2:]))]


def ref_wgrad(x, dy, wshape, kw):
    """The adjoint of ref_fwd in the weight."""
    k, s, d, p, g = _geom(kw)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(a, a) for a in p])
    dw = np.zeros(wshape)
    for t in _taps(k):
        patch = xp[_tap(t, dy.shape[2:], s, d)]
        for cs, fs in _groups(g, x.shape[1], wshape[0]):
            axes = [0] + list(range(2, dy.ndim))         # samples and positions
            dw[(fs, slice(None)) + t] = np.tensordot(dy[:, fs], patch[:, cs], (axes, axes))
    return dw


def _bgrad(dy):
    return dy.sum(axis=tuple(i for i in range(dy.ndim) if i != 1))


def _deconv_pad_adj(x, kw):
    """Deconvolution's (pad, adj) from target_shape, as MXNet's InferPad."""
    k, s, d, p, _ = _geom(kw)
    if not kw.get("target_shape"):
        return p, tuple(kw.get("adj", (0,) * len(k)))
    total = [s[i] * (x.shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1 - kw["target_shape"][i]
             for i in range(len(k))]
    return tuple((t + 1) // 2 for t in total), tuple(t % 2 for t in total)


def ref_deconv(x, w, b, kw):
    k, s, d, _, _ = _geom(kw)
    p, adj = _deconv_pad_adj(x, kw)
    out = tuple(s[i] * (x.shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1 - 2 * p[i] + adj[i]
                for i in range(len(k)))
    geo = dict(kw, pad=p)
    y = ref_dgrad(x.astype(np.float64), w, (x.shape[0], w.shape[1] * geo.get("num_group", 1))
                  + out, geo)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * len(k))
    return y, geo


# ------------------------------------------------------------------- conv
CONV = [  # (data shape, num_filter, params)
    ((2, 3, 5, 6, 7), 4, dict(kernel=(3, 3, 3), pad=(1, 1, 1))),
    ((2, 4, 6, 5, 7), 6, dict(kernel=(3, 2, 3), stride=(2, 1, 2), dilate=(1, 2, 1),
                              pad=(1, 1, 0), num_group=2)),
    ((1, 6, 4, 5, 6), 6, dict(kernel=(2, 3, 2), stride=(1, 2, 1), dilate=(2, 1, 2),
                              pad=(2, 1, 0), num_group=3, no_bias=True)),
    ((3, 2, 3, 4, 4), 5, dict(kernel=(1, 1, 1))),
    ((4, 8, 6, 7, 8), 8, dict(kernel=(3, 3, 3), stride=(2, 2, 2), pad=(1, 1, 1))),
]

DECONV = [
    ((2, 4, 3, 4, 3), 4, dict(kernel=(3, 3, 2), stride=(2, 1, 2), pad=(1, 0, 1), adj=(1, 0, 1),
                              num_group=2, no_bias=False)),
    ((1, 3, 3, 3, 4), 2, dict(kernel=(3, 3, 3), stride=(2, 2, 2), target_shape=(6, 6, 8))),
    ((2, 2, 3, 3, 3), 3, dict(kernel=(2, 2, 2), no_bias=False)),
    ((3, 6, 4, 5, 4), 4, dict(kernel=(3, 3, 3), stride=(2, 2, 2), pad=(1, 1, 1))),
]


def _conv_arrays(case, dtype, deconv=False):
    shape, nf, kw = (DECONV if deconv else CONV)[case]
    rng = np.random.default_rng(case)
    g = kw.get("num_group", 1)
    x = rng.standard_normal(shape).astype(dtype)
    wshape = ((shape[1], nf // g) if deconv else (nf, shape[1] // g)) + kw["kernel"]
    w = rng.standard_normal(wshape).astype(dtype)
    b = None if kw.get("no_bias", deconv) else rng.standard_normal(nf).astype(dtype)
    return rng, x, w, b, dict(kw, num_filter=nf)


def _ins(x, w, b):
    return [x, w] + ([] if b is None else [b])


def _kw(params):
    return {k: v for k, v in params.items() if k not in ("num_filter", "no_bias")}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CONV)))
def test_convolution_3d(nn, case, dtype, threads):
    old = _conv_cpu.set_max_threads(threads)
    try:
        rng, x, w, b, params = _conv_arrays(case, dtype)
        kw = _kw(params)
        y = ref_fwd(x, w, b, kw)
        nn.check_reqs("Convolution", _ins(x, w, b), [y], params, dtype)
        dy = rng.standard_normal(y.shape).astype(dtype)
        want = [ref_dgrad(dy.astype(np.float64), w, x.shape, kw),
                ref_wgrad(x, dy.astype(np.float64), w.shape, kw)]
        if b is not None:
            want.append(_bgrad(dy.astype(np.float64)))
        nn.check_reqs("_backward_Convolution", [dy, x, w], want, params, dtype)
    finally:
        _conv_cpu.set_max_threads(old)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(DECONV)))
def test_deconvolution_3d(nn, case, dtype, threads):
    old = _conv_cpu.set_max_threads(threads)
    try:
        rng, x, w, b, params = _conv_arrays(case, dtype, deconv=True)
        y, geo = ref_deconv(x, w, b, _kw(params))
        nn.check_reqs("Deconvolution", _ins(x, w, b), [y], params, dtype)
        dy = rng.standard_normal(y.shape).astype(dtype)
        # Deconvolution's data grad is the convolution of out_grad.
        want = [ref_fwd(dy, w, None, geo), ref_wgrad(dy, x.astype(np.float64), w.shape, geo)]
        if b is not None:
            want.append(_bgrad(dy.astype(np.float64)))
        nn.check_reqs("_backward_Deconvolution", [dy, x, w], want, params, dtype)
    finally:
        _conv_cpu.set_max_threads(old)


def test_float16_3d_runs_in_float32():
    _, x, w, b, params = _conv_arrays(1, "float16")
    got = invoke("Convolution", _ins(x, w, b), **params)
    assert got.dtype == np.float16
    want = ref_fwd(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                   _kw(params))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=2e-2)
    _, x, w, b, params = _conv_arrays(0, "float16", deconv=True)
    got = invoke("Deconvolution", _ins(x, w, b), **params)
    want, _ = ref_deconv(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                         _kw(params))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("op,shape,nf,kw", [
    ("Convolution", (2, 4, 3, 4, 3), 4, dict(kernel=(2, 3, 2), stride=(1, 2, 1),
                                             dilate=(2, 1, 1), pad=(1, 1, 0), num_group=2)),
    ("Deconvolution", (1, 2, 2, 3, 2), 4, dict(kernel=(2, 2, 3), stride=(2, 1, 2),
                                               pad=(0, 1, 1), adj=(1, 0, 1), no_bias=False)),
])
def test_finite_differences_3d(op, shape, nf, kw):
    rng = np.random.default_rng(3)
    g = kw.get("num_group", 1)
    x = rng.standard_normal(shape)
    wshape = ((shape[1], nf // g) if op == "Deconvolution" else (nf, shape[1] // g)) + kw["kernel"]
    check_numeric_gradient(op, [x, rng.standard_normal(wshape), rng.standard_normal(nf)],
                           rtol=1e-5, atol=1e-7, num_filter=nf, **kw)


def test_shape_inference_3d():
    conv, deconv = get("Convolution"), get("Deconvolution")
    p = conv.parse_params(dict(kernel=(3, 3, 3), stride=(2, 1, 1), pad=(1, 1, 1), num_filter=8))
    ins, outs = infer_shapes(conv, p, [(0, 3, 9, 0, 7), None, None])
    assert ins[1:] == [(8, 3, 3, 3, 3), (8,)] and outs == [(0, 8, 5, 0, 7)]
    ins, _ = infer_shapes(conv, p, [(0, 3, 0, 0, 0), None, None], [(4, 8, 5, 6, 7)])
    assert ins[0] == (4, 3, 0, 6, 7)           # back through the stride-1 axes
    p = deconv.parse_params(dict(kernel=(3, 3, 3), stride=(2, 2, 2), num_filter=4,
                                 adj=(1, 0, 1)))
    ins, outs = infer_shapes(deconv, p, [(2, 6, 3, 0, 4), None])
    assert ins[1] == (6, 4, 3, 3, 3) and outs == [(2, 4, 8, 0, 10)]
    pool = get("Pooling")
    p = pool.parse_params(dict(kernel=(2, 2, 2), stride=(2, 2, 2), pooling_convention="full"))
    assert infer_shapes(pool, p, [(2, 3, 5, 0, 8)])[1] == [(2, 3, 3, 0, 4)]


@pytest.mark.parametrize("op,ins,kw,err,msg", [
    ("Convolution", [(1, 3, 5, 5, 5, 5), (4, 3, 3, 3, 3, 3)],
     dict(num_filter=4, kernel=(3, 3, 3, 3), no_bias=True), ParamError,
     r"'kernel' \(3, 3, 3, 3\) must have 1, 2 or 3 entries"),
    ("Convolution", [(1, 3, 5, 5, 5), (4, 3, 3, 3, 3)],
     dict(num_filter=4, kernel=(3, 3, 3), layout="NCHW", no_bias=True), ParamError,
     r"layout NCHW is not supported with a 3-D kernel; only NCDHW"),
    ("Convolution", [(1, 3, 5, 5), (4, 3, 3, 3, 3)],
     dict(num_filter=4, kernel=(3, 3, 3), no_bias=True), ShapeError,
     r"a 3-D kernel \(3, 3, 3\) needs a 5-d input \(NCDHW\)"),
    ("Deconvolution", [(1, 3, 4, 4, 4), (3, 2, 3, 3, 3)],
     dict(num_filter=2, kernel=(3, 3, 3), dilate=(1, 1, 2)), ParamError,
     r"'dilate' \(1, 1, 2\) must be 1 on every axis with a 3-D kernel"),
    ("Pooling", [(1, 2, 4, 4, 4)], dict(kernel=(2, 2, 2), layout="NCHW"), ShapeError,
     r"argument 'layout' 'NCHW' is not supported for 'data' of shape \(1, 2, 4, 4, 4\)"),
    ("Pooling", [(1, 2, 4, 4, 4)], dict(kernel=(2, 2, 2), pool_type="lp"), ShapeError,
     r"pool_type 'lp' needs argument 'p_value' 1, 2 or 3, got None"),
    ("Pooling", [(1, 2, 4, 4, 4)], dict(kernel=(2, 2, 2), pool_type="lp", p_value=4), ShapeError,
     r"got 4"),
    ("Pooling", [(1, 2, 4)], dict(kernel=(2,), pooling_convention="same"), ShapeError,
     r"'pooling_convention' 'same' is not supported"),
    ("Pooling", [(1, 2, 4, 4, 4)], dict(kernel=(2, 2)), ShapeError,
     r"argument 'kernel' is \(2, 2\), which needs 3 value\(s\)"),
])
def test_errors_3d(op, ins, kw, err, msg):
    with pytest.raises(err, match=msg):
        invoke(op, [np.zeros(s, np.float32) for s in ins], **kw)


# ---------------------------------------------------------------- pooling
def ref_pool(x, kernel, stride, pad, pool_type, full=False, include_pad=True, p_value=None,
             og=None):
    """N-D pooling on NC* data with MXNet's windows (pool.h): the output, or
    with ``og`` the input gradient."""
    nd = x.ndim - 2
    span = [x.shape[2 + i] + 2 * pad[i] - kernel[i] for i in range(nd)]
    out = tuple(1 + (-(-span[i] // stride[i]) if full else span[i] // stride[i])
                for i in range(nd))
    y = np.zeros(x.shape[:2] + out)
    dx = np.zeros(x.shape)
    for o in itertools.product(*(range(n) for n in out)):
        lo = [o[i] * stride[i] - pad[i] for i in range(nd)]
        hi = [min(lo[i] + kernel[i], x.shape[2 + i] + pad[i]) for i in range(nd)]
        count = np.prod([h - l for l, h in zip(lo, hi)])
        lo = [max(v, 0) for v in lo]
        hi = [min(h, x.shape[2 + i]) for i, h in enumerate(hi)]
        if not include_pad:
            count = np.prod([h - l for l, h in zip(lo, hi)])
        win = (slice(None), slice(None)) + tuple(slice(l, h) for l, h in zip(lo, hi))
        vals = x[win]
        flat = vals.reshape(vals.shape[:2] + (-1,))
        at = (slice(None), slice(None)) + o
        if pool_type == "max":
            y[at] = flat.max(-1)
        elif pool_type == "lp":
            y[at] = np.cbrt((flat ** 3).sum(-1)) if p_value == 3 else \
                (flat ** p_value).sum(-1) ** (1 / p_value)
        else:
            y[at] = flat.sum(-1) / (count if pool_type == "avg" else 1)
        if og is None:
            continue
        g = og[at][(...,) + (None,) * nd]
        if pool_type == "max":
            first = np.zeros(flat.shape)
            np.put_along_axis(first, flat.argmax(-1)[..., None], 1, -1)
            dx[win] += first.reshape(vals.shape) * g
        elif pool_type == "lp":
            dx[win] += g * (vals / y[at][(...,) + (None,) * nd]) ** (p_value - 1)
        else:
            dx[win] += g / (count if pool_type == "avg" else 1)
    return y if og is None else dx


POOL = [  # (shape, params)
    ((2, 3, 5, 6, 7), dict(kernel=(3, 3, 2), stride=(2, 2, 2), pad=(1, 1, 0))),
    ((1, 2, 4, 5, 6), dict(kernel=(2, 3, 3), stride=(1, 2, 2), pad=(1, 1, 1),
                           pooling_convention="full")),
    ((2, 2, 4, 6, 6), dict(kernel=(1, 2, 2), stride=(1, 2, 2))),      # the 2x2 tiles path
    ((1, 3, 5, 5, 5), dict(kernel=(3, 3, 3), stride=(1, 1, 1), pad=(1, 1, 1),
                           count_include_pad=False)),
    ((2, 2, 3, 4, 5), dict(kernel=(3, 4, 5), global_pool=True)),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum", "lp1", "lp2", "lp3"])
@pytest.mark.parametrize("case", range(len(POOL)))
def test_pooling_3d(nn, case, pool_type, dtype):
    shape, kw = POOL[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    p_value = int(pool_type[2]) if pool_type.startswith("lp") else None
    if p_value == 2:
        x = np.abs(x) + np.asarray(0.5, dtype)       # keeps sqrt's argument away from 0
    params = dict(kw, pool_type=pool_type[:2] if p_value else pool_type)
    if p_value:
        params["p_value"] = p_value
    if kw.get("global_pool"):
        k, s, p = shape[2:], (1, 1, 1), (0, 0, 0)
    else:
        k, s, p = kw["kernel"], kw["stride"], kw.get("pad", (0, 0, 0))
    ref = dict(full=kw.get("pooling_convention") == "full",
               include_pad=kw.get("count_include_pad", True), p_value=p_value)
    x64 = x.astype(np.float64)
    want = ref_pool(x64, k, s, p, params["pool_type"], **ref)
    if dtype == "float16" and p_value == 3:
        return                # float16 cubes of sums: checked in float32 / float64 only
    nn.check_reqs("Pooling", [x], [want], params, dtype)
    y = invoke("Pooling", [x], **params)
    og = rng.standard_normal(y.shape).astype(dtype)
    dx = ref_pool(x64, k, s, p, params["pool_type"], og=og.astype(np.float64),
                  **dict(ref, **({"p_value": p_value} if p_value else {})))
    if p_value == 3 and dtype != "float64":
        # (x / y)^2 of the kernel's y against the reference's: compare loosely.
        np.testing.assert_allclose(invoke("_backward_Pooling", [og, x, y], **params), dx,
                                   rtol=1e-3, atol=1e-3)
    elif dtype != "float16" or params["pool_type"] != "lp":
        nn.check_reqs("_backward_Pooling", [og, x, y], [dx], params, dtype)
    if dtype == "float64" and case < 2:
        num = nn.numeric_grad(lambda v: invoke("Pooling", [v], **params), x, og)
        np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-7)



# --------------------------------------------- the CPU gradient kernels' paths
# conv_cpu.h: the forward and the stride-1 data grad (a convolution of
# out_grad with the flipped weight) run on the direct kernel (plan
# "direct"), the weight grad on the dot-product kernel (plan "dot"), each
# on a padded image where stride 1 along W and rows at least a vector long
# allow it, tails included.
@pytest.fixture(params=_conv_cpu.available_isas())
def isa(request):
    old = _conv_cpu.set_isa(request.param)
    yield request.param
    _conv_cpu.set_isa(old)


KERNEL_PATHS = [  # (data shape, num_filter, params)
    ((2, 4, 4, 5, 30), 6, dict(kernel=(3, 3, 3), pad=(1, 1, 1))),    # rows with a tail
    ((2, 8, 3, 4, 32), 16, dict(kernel=(3, 3, 3), pad=(1, 1, 1))),   # whole vectors
    ((2, 6, 5, 6, 21), 4, dict(kernel=(2, 3, 3), dilate=(2, 1, 2), pad=(2, 0, 2),
                              num_group=2)),                  # pad = d * (k - 1)
    ((3, 4, 6, 7, 20), 8, dict(kernel=(3, 3, 3), stride=(2, 2, 1), pad=(1, 0, 1))),
    ((2, 3, 4, 4, 18), 4, dict(kernel=(1, 2, 3), pad=(0, 1, 3))),   # pad > d * (k - 1)
    ((2, 4, 3, 5, 40), 6, dict(kernel=(3, 3, 3), stride=(1, 1, 2), pad=(1, 1, 1))),
    ((2, 160, 3, 20), 256, dict(kernel=(3, 3), pad=(1, 1))),    # 2-D, many filters
    ((2, 16, 3, 32), 16, dict(kernel=(1, 1))),                  # 1x1: no direct data grad
]


def _expected_paths(shape, params, nf, out_w, isa, dtype):
    """The planner's rules: (direct forward, direct data grad, dot-product
    weight grad).  Each needs stride 1 along W and rows (output rows of the
    forward and weight grad, image rows of the data grad) a vector long;
    the direct kernel rows that fill 4/5 of the vectors they take and half
    a register tile of output channels (8 of AVX-512's, else 4), and for
    the data grad a kernel bigger than 1x1; the dot products filters that
    the GEMM would take as its rows (F-major)."""
    k, s, d, p, g = _geom(params)
    lanes = {"generic": 16, "avx2": 32, "avx512": 64}[isa] // np.dtype(dtype).itemsize
    tile = 8 if isa == "avx512" else 4
    def fills(w):
        return 5 * w >= 4 * -(-w // lanes) * lanes
    fwd = s[-1] == 1 and fills(out_w) and 2 * (nf // g) >= tile
    dgrad = (max(k) > 1 and all(si == 1 and pi <= di * (ki - 1)
                                for ki, si, di, pi in zip(k, s, d, p))
             and fills(shape[-1]) and 2 * (shape[1] // g) >= tile)
    nr, fg = lanes * (4 if isa == "avx512" else 2), nf // g        # the GEMM's panel width
    f_major = -(-fg // nr) * nr * 8 > -(-fg // 6) * 6 * 9
    return fwd, dgrad, f_major and s[-1] == 1 and out_w >= lanes


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", range(len(KERNEL_PATHS)))
def test_direct_and_dot_paths(nn, case, isa, threads):
    shape, nf, params = KERNEL_PATHS[case]
    kw = _kw(params)
    rng = np.random.default_rng(40 + case)
    old = _conv_cpu.set_max_threads(threads)
    try:
        for dtype in ("float32", "float64"):
            x = rng.standard_normal(shape).astype(dtype)
            w = rng.standard_normal((nf, shape[1] // kw.get("num_group", 1)) + kw["kernel"])
            w = (w / np.sqrt(w[0].size)).astype(dtype)      # sums near 1: float32's tolerance
            dy = rng.standard_normal(ref_fwd(x, w, None, kw).shape).astype(dtype)
            o = get("Convolution")
            packed = o.pack_params(o.parse_params(dict(params, num_filter=nf, no_bias=True)),
                                   [x.shape, w.shape])
            want = _expected_paths(shape, kw, nf, dy.shape[-1], isa, dtype)
            got = (_conv_cpu.plan("fwd", packed, x.shape, dy.shape, threads, dtype)["direct"],
                   _conv_cpu.plan("dgrad", packed, x.shape, dy.shape, threads, dtype)["direct"],
                   _conv_cpu.plan("wgrad", packed, x.shape, dy.shape, threads, dtype)["dot"])
            assert got == want
            b = rng.standard_normal(nf).astype(dtype)
            nn.check_reqs("Convolution", [x, w, b], [ref_fwd(x, w, b, kw)],
                          dict(params, num_filter=nf), dtype)
            nn.check_reqs("_backward_Convolution", [dy, x, w],
                          [ref_dgrad(dy.astype(np.float64), w, x.shape, kw),
                           ref_wgrad(x, dy.astype(np.float64), w.shape, kw)],
                          dict(params, num_filter=nf, no_bias=True), dtype)
            if len(shape) == 5 and max(kw.get("dilate", (1,))) > 1:
                continue          # MXNet 1.9.1 does not dilate 3-D Deconvolution
            # Deconvolution's forward is the same data grad pass.
            b = rng.standard_normal(shape[1]).astype(dtype)
            y, _ = ref_deconv(dy, np.ascontiguousarray(w), b, kw)
            nn.check_reqs("Deconvolution", [dy, w, b], [y],
                          dict(params, num_filter=shape[1], no_bias=False), dtype)
    finally:
        _conv_cpu.set_max_threads(old)



def test_images_past_the_padded_copy_limit_keep_the_gemm_passes():
    """A sample's padded channels over 2**21 elements (kConvPaddedElems)
    are not copied: every pass takes the packed GEMM, with the same
    results."""
    shape, nf, params = (1, 4, 600, 1000), 4, dict(kernel=(3, 3), pad=(1, 1), no_bias=True)
    rng = np.random.default_rng(60)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((nf, 4, 3, 3)) / 6).astype(np.float32)
    kw = _kw(params)
    y = invoke("Convolution", [x, w], num_filter=nf, **params)
    np.testing.assert_allclose(y, ref_fwd(x, w, None, kw), rtol=1e-4, atol=1e-4)
    o = get("Convolution")
    packed = o.pack_params(o.parse_params(dict(params, num_filter=nf)), [x.shape, w.shape])
    plans = [_conv_cpu.plan(p, packed, x.shape, y.shape, 2) for p in ("fwd", "dgrad", "wgrad")]
    assert not (plans[0]["direct"] or plans[1]["direct"] or plans[2]["dot"])
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw = invoke("_backward_Convolution", [dy, x, w], num_filter=nf, **params)
    np.testing.assert_allclose(dx, ref_dgrad(dy.astype(np.float64), w, x.shape, kw),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, ref_wgrad(x, dy.astype(np.float64), w.shape, kw),
                               rtol=1e-4, atol=2e-2)


# ------------------------------------------------------------ MXNet 1.9.1
_DATA = os.path.join(os.path.dirname(__file__), "data", "conv3d_mxnet191.npz")
with np.load(_DATA) as _f:
    _MX = dict(_f)
_INDEX = json.loads(str(_MX["index"]))


@pytest.mark.parametrize("case", sorted(_INDEX))
def test_matches_mxnet_191(case):
    spec = _INDEX[case]
    ins = [_MX[f"{case}/in{i}"] for i in range(spec["nin"])]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["params"].items()}
    y = invoke(spec["op"], ins, **params)
    np.testing.assert_allclose(y, _MX[f"{case}/out"], rtol=1e-4, atol=1e-4)
    g = _MX[f"{case}/g"]
    if spec["op"] == "Pooling":
        grads = [invoke("_backward_Pooling", [g, ins[0], y], **params)]
    else:
        grads = invoke("_backward_" + spec["op"], [g] + ins[:2], **params)
    for i, gr in enumerate(grads):
        np.testing.assert_allclose(gr, _MX[f"{case}/grad{i}"], rtol=1e-4, atol=1e-4,
                                   err_msg=f"{case}: gradient {i}")
