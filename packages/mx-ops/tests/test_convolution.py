"""Convolution and Deconvolution (and their _backward_ ops) against a direct
NumPy reference, central finite differences and the adjoint identity."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError

REQS = ("write", "inplace", "add", "null")


# ----------------------------------------------------------------- reference
def _geom(kernel, stride, dilate, pad):
    nd = len(kernel)
    return (tuple(kernel), tuple(stride or (1,) * nd), tuple(dilate or (1,) * nd),
            tuple(pad or (0,) * nd))


def _as2d(x):
    return x[:, :, None, :] if x.ndim == 3 else x


def ref_conv(x, w, b, kernel, stride=(), dilate=(), pad=(), num_group=1):
    """Direct convolution: one dot per output position and group."""
    k, s, d, p = _geom(kernel, stride, dilate, pad)
    one_d = x.ndim == 3
    if one_d:
        k, s, d, p = (1,) + k, (1,) + s, (1,) + d, (0,) + p
    x2, w2 = _as2d(x), _as2d(w)
    n, c, h, wd = x2.shape
    f = w2.shape[0]
    xp = np.zeros((n, c, h + 2 * p[0], wd + 2 * p[1]), x.dtype)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd] = x2
    ho = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (wd + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, f, ho, wo), np.float64)
    cg, fg = c // num_group, f // num_group
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0],
                       j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]]
            for g in range(num_group):
                out[:, g * fg:(g + 1) * fg, i, j] = np.tensordot(
                    patch[:, g * cg:(g + 1) * cg], w2[g * fg:(g + 1) * fg], ([1, 2, 3], [1, 2, 3]))
    if b is not None:
        out += b[None, :, None, None]
    return (out[:, :, 0] if one_d else out).astype(x.dtype)


def ref_conv_grads(x, w, dy, kernel, stride=(), dilate=(), pad=(), num_group=1):
    """(data_grad, weight_grad, bias_grad) of ref_conv, by the same loop."""
    k, s, d, p = _geom(kernel, stride, dilate, pad)
    one_d = x.ndim == 3
    if one_d:
        k, s, d, p = (1,) + k, (1,) + s, (1,) + d, (0,) + p
    x2, w2, dy2 = _as2d(x), _as2d(w), _as2d(dy)
    n, c, h, wd = x2.shape
    f = w2.shape[0]
    xp = np.zeros((n, c, h + 2 * p[0], wd + 2 * p[1]))
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd] = x2
    dxp, dw = np.zeros_like(xp), np.zeros(w2.shape)
    cg, fg = c // num_group, f // num_group
    for i in range(dy2.shape[2]):
        for j in range(dy2.shape[3]):
            sl = (slice(None), slice(None), slice(i * s[0], i * s[0] + d[0] * (k[0] - 1) + 1, d[0]),
                  slice(j * s[1], j * s[1] + d[1] * (k[1] - 1) + 1, d[1]))
            for g in range(num_group):
                go = dy2[:, g * fg:(g + 1) * fg, i, j]                  # (n, fg)
                dxp[sl][:, g * cg:(g + 1) * cg] += np.tensordot(go, w2[g * fg:(g + 1) * fg], (1, 0))
                dw[g * fg:(g + 1) * fg] += np.tensordot(go, xp[sl][:, g * cg:(g + 1) * cg], (0, 0))
    dx = dxp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd]
    db = dy2.sum(axis=(0, 2, 3))
    if one_d:
        dx, dw = dx[:, :, 0], dw[:, :, 0]
    return dx, dw, db


# ------------------------------------------------------------------- cases
CASES = [  # (data shape, num_filter, kwargs)
    ((2, 3, 7, 6), 4, dict(kernel=(3, 3))),
    ((3, 4, 9, 8), 6, dict(kernel=(3, 2), stride=(2, 1), pad=(1, 2), num_group=2)),
    ((2, 2, 10, 9), 3, dict(kernel=(2, 3), dilate=(2, 2), pad=(1, 0), no_bias=True)),
    ((2, 6, 8, 8), 6, dict(kernel=(3, 3), stride=(2, 2), dilate=(1, 2), pad=(2, 1),
                           num_group=3)),
    ((1, 4, 5, 5), 8, dict(kernel=(1, 1))),                           # 1x1: no im2col
    ((3, 3, 11), 5, dict(kernel=(3,), stride=(2,), pad=(1,))),        # 1-D
    ((2, 4, 12), 4, dict(kernel=(2,), dilate=(3,), num_group=4, no_bias=True)),
    ((9, 1, 28, 28), 20, dict(kernel=(5, 5))),                        # LeNet, batch-parallel
    ((2, 8, 20, 20), 16, dict(kernel=(3, 3), pad=(1, 1))),
]


def _arrays(rng, shape, nf, kw, dtype, deconv=False):
    k = kw["kernel"]
    g = kw.get("num_group", 1)
    x = rng.standard_normal(shape).astype(dtype)
    wshape = (shape[1], nf // g) + k if deconv else (nf, shape[1] // g) + k
    w = rng.standard_normal(wshape).astype(dtype)
    nobias = kw.get("no_bias", deconv)
    b = None if nobias else rng.standard_normal(nf).astype(dtype)
    return x, w, b


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_matches_reference(case, dtype):
    shape, nf, kw = CASES[case]
    rng = np.random.default_rng(case)
    x, w, b = _arrays(rng, shape, nf, kw, dtype)
    ins = [x, w] + ([] if b is None else [b])
    got = invoke("Convolution", ins, num_filter=nf, **kw)
    np.testing.assert_allclose(got, ref_conv(x, w, b, **_ref_kw(kw)), **_tol(dtype))


def _ref_kw(kw):
    return {k: v for k, v in kw.items() if k != "no_bias"}


@pytest.mark.parametrize("req", REQS)
def test_forward_req(req):
    shape, nf, kw = CASES[1]
    rng = np.random.default_rng(1)
    x, w, b = _arrays(rng, shape, nf, kw, np.float64)
    want = ref_conv(x, w, b, **_ref_kw(kw))
    out = rng.standard_normal(want.shape)
    before = out.copy()
    invoke("Convolution", [x, w, b], out=out, req=req, num_filter=nf, **kw)
    expect = {"write": want, "inplace": want, "add": before + want, "null": before}[req]
    np.testing.assert_allclose(out, expect, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_backward_matches_reference(case, dtype):
    shape, nf, kw = CASES[case]
    rng = np.random.default_rng(100 + case)
    x, w, b = _arrays(rng, shape, nf, kw, dtype)
    y = ref_conv(x, w, b, **_ref_kw(kw))
    dy = rng.standard_normal(y.shape).astype(dtype)
    got = invoke("_backward_Convolution", [dy, x, w], num_filter=nf, **kw)
    want = ref_conv_grads(x, w, dy, **_ref_kw(kw))
    assert len(got) == (2 if b is None else 3)
    for g, e in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, **_tol(dtype))


@pytest.mark.parametrize("op", ["_backward_Convolution", "_backward_Deconvolution"])
@pytest.mark.parametrize("reqs", [("add", "add", "add"), ("null", "write", "add"),
                                  ("write", "null", "null"), ("add", "add", "write")])
def test_backward_req(op, reqs):
    shape, nf, kw = CASES[3]
    deconv = "Deconv" in op
    kw = dict(kw, no_bias=False)
    rng = np.random.default_rng(7)
    x, w, b = _arrays(rng, shape, nf, kw, np.float64, deconv=deconv)
    fwd = get(op[len("_backward_"):])
    yshape = fwd.infer_shape(fwd.parse_params(dict(kw, num_filter=nf)), [x.shape, w.shape,
                                                                          b.shape])[0]
    dy = rng.standard_normal(yshape)
    want = invoke(op, [dy, x, w], num_filter=nf, **kw)
    outs = [rng.standard_normal(a.shape) for a in want]
    before = [o.copy() for o in outs]
    invoke(op, [dy, x, w], out=outs, req=list(reqs), num_filter=nf, **kw)
    for o, bef, wnt, r in zip(outs, before, want, reqs):
        expect = {"write": wnt, "add": bef + wnt, "null": bef}[r]
        np.testing.assert_allclose(o, expect, rtol=1e-10, atol=1e-10)


def _loss_grads(op, x, w, b, dy, kw, nf):
    """Finite-difference gradient of <op(x, w, b), dy> for each input."""
    def loss(xx, ww, bb):
        ins = [xx, ww] + ([] if bb is None else [bb])
        return float(np.sum(invoke(op, ins, num_filter=nf, **kw) * dy))
    grads = []
    for which in range(2 if b is None else 3):
        arrs = [x, w, b]
        a = arrs[which]
        g = np.zeros_like(a)
        eps = 1e-6
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + eps
            up = loss(*arrs)
            a[i] = old - eps
            down = loss(*arrs)
            a[i] = old
            g[i] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("op,shape,nf,kw", [
    ("Convolution", (2, 4, 5, 4), 4, dict(kernel=(3, 2), stride=(2, 1), pad=(1, 1),
                                           num_group=2)),
    ("Convolution", (2, 2, 7), 3, dict(kernel=(3,), dilate=(2,), pad=(2,))),
    ("Deconvolution", (2, 4, 3, 3), 2, dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0),
                                             adj=(1, 1), num_group=2, no_bias=False)),
    ("Deconvolution", (2, 3, 4), 2, dict(kernel=(2,), stride=(3,), dilate=(2,))),
])
def test_backward_finite_differences(op, shape, nf, kw):
    rng = np.random.default_rng(3)
    x, w, b = _arrays(rng, shape, nf, kw, np.float64, deconv=op == "Deconvolution")
    ins = [x, w] + ([] if b is None else [b])
    y = invoke(op, ins, num_filter=nf, **kw)
    dy = rng.standard_normal(y.shape)
    got = invoke("_backward_" + op, [dy, x, w], num_filter=nf, **kw)
    for g, e in zip(got, _loss_grads(op, x, w, b, dy, kw, nf)):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


DECONV_CASES = [
    ((2, 4, 5, 4), 6, dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 0), num_group=2)),
    ((3, 3, 4, 4), 2, dict(kernel=(2, 3), dilate=(2, 1), stride=(1, 2))),
    ((2, 3, 6), 4, dict(kernel=(4,), stride=(2,), pad=(1,))),
    ((2, 2, 3, 3), 3, dict(kernel=(3, 3), stride=(2, 2), target_shape=(6, 7))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(DECONV_CASES)))
def test_deconvolution_is_adjoint_of_convolution(case, dtype):
    """<conv(z), y> == <z, deconv(y)> with the same weight and geometry."""
    shape, nf, kw = DECONV_CASES[case]
    rng = np.random.default_rng(50 + case)
    y, w, _ = _arrays(rng, shape, nf, kw, dtype, deconv=True)
    out = invoke("Deconvolution", [y, w], num_filter=nf, **kw)
    if "target_shape" in kw:
        assert out.shape[2:] == kw["target_shape"]
    z = rng.standard_normal(out.shape).astype(dtype)
    conv_kw = {k: v for k, v in kw.items() if k not in ("adj", "target_shape")}
    if "target_shape" in kw:         # the padding Deconvolution derived
        conv_kw["pad"] = (1, 0)
    cz = invoke("Convolution", [z, w], num_filter=shape[1], no_bias=True, **conv_kw)
    assert cz.shape == y.shape
    lhs, rhs = float(np.sum(cz * y, dtype=np.float64)), float(np.sum(z * out, dtype=np.float64))
    assert lhs == pytest.approx(rhs, rel=1e-4 if dtype == np.float32 else 1e-11)


def test_deconvolution_bias_and_req():
    shape, nf, kw = DECONV_CASES[0]
    rng = np.random.default_rng(9)
    x, w, _ = _arrays(rng, shape, nf, kw, np.float64, deconv=True)
    b = rng.standard_normal(nf)
    plain = invoke("Deconvolution", [x, w], num_filter=nf, **kw)
    out = rng.standard_normal(plain.shape)
    before = out.copy()
    invoke("Deconvolution", [x, w, b], out=out, req="add", num_filter=nf, no_bias=False, **kw)
    np.testing.assert_allclose(out, before + plain + b[None, :, None, None], rtol=1e-12)
    got = invoke("_backward_Deconvolution", [out, x, w], num_filter=nf, no_bias=False, **kw)
    np.testing.assert_allclose(got[2], out.sum(axis=(0, 2, 3)), rtol=1e-12)


def test_float16_runs_in_float32():
    shape, nf, kw = CASES[1]
    rng = np.random.default_rng(11)
    x, w, b = _arrays(rng, shape, nf, kw, np.float16)
    got = invoke("Convolution", [x, w, b], num_filter=nf, **kw)
    assert got.dtype == np.float16
    want = ref_conv(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32),
                    **_ref_kw(kw))
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_input_names_depend_on_no_bias():
    op = get("Convolution")
    assert op.num_inputs is None
    assert op.input_names(op.parse_params(dict(kernel=(3,), num_filter=2))) == [
        "data", "weight", "bias"]
    p = op.parse_params(dict(kernel=(3,), num_filter=2, no_bias=True))
    assert op.input_names(p) == ["data", "weight"] and op.input_count(p) == 2
    d = get("Deconvolution")
    assert d.input_count(d.parse_params(dict(kernel=(3,), num_filter=2))) == 2  # no_bias=True
    back = get("_backward_Convolution")
    assert back.output_names(p) == ["data_grad", "weight_grad"]
    with pytest.raises(ParamError, match=r"takes 2 input\(s\) \(data, weight\)"):
        invoke("Convolution", [np.zeros((1, 1, 3))] * 3, kernel=(3,), num_filter=1,
               no_bias=True)


def test_ignored_cudnn_and_workspace_params():
    x = np.ones((1, 1, 4, 4), np.float32)
    w = np.ones((1, 1, 2, 2), np.float32)
    got = invoke("Convolution", [x, w], kernel="(2, 2)", num_filter="1", no_bias="True",
                 workspace="2048", cudnn_tune="fastest", cudnn_off="True", layout="NCHW")
    np.testing.assert_array_equal(got, np.full((1, 1, 3, 3), 4, np.float32))


@pytest.mark.parametrize("op,ins,kw,err,msg", [
    ("Convolution", [(1, 3, 5, 5), (4, 2, 3, 3), (4,)], dict(num_filter=4, kernel=(3, 3)),
     ShapeError, r"Convolution: argument 'weight' has shape \(4, 2, 3, 3\), expected "
                 r"\(4, 3, 3, 3\)"),
    ("Convolution", [(1, 3, 5, 5), (4, 3, 3, 3), (5,)], dict(num_filter=4, kernel=(3, 3)),
     ShapeError, r"argument 'bias' has shape \(5,\)"),
    ("Convolution", [(1, 3, 2, 5), (4, 3, 3, 3), (4,)], dict(num_filter=4, kernel=(3, 3)),
     ShapeError, r"Convolution: the dilated kernel \(3, 3\).*larger than the padded input: "
                 r"data \(1, 3, 2, 5\)"),
    ("Convolution", [(1, 4, 5, 5), (3, 2, 3, 3)], dict(num_filter=3, kernel=(3, 3),
                                                       num_group=2, no_bias=True),
     ShapeError, r"num_filter 3 is not divisible by num_group 2"),
    ("Convolution", [(1, 3, 5, 5), (4, 1, 3, 3)], dict(num_filter=4, kernel=(3, 3),
                                                       num_group=2, no_bias=True),
     ShapeError, r"argument 'data' has shape \(1, 3, 5, 5\), whose 3 channels"),
    ("Convolution", [(1, 3, 5), (4, 3, 3, 3)], dict(num_filter=4, kernel=(3, 3), no_bias=True),
     ShapeError, r"argument 'data' has shape \(1, 3, 5\), but a 2-D kernel"),
    ("Convolution", [(1, 3, 5, 5, 5, 5), (4, 3, 3, 3, 3, 3)],
     dict(num_filter=4, kernel=(3, 3, 3, 3), no_bias=True),
     ParamError, r"must have 1, 2 or 3 entries"),
    ("Convolution", [(1, 3, 5, 5), (4, 3, 3, 3)], dict(num_filter=4, kernel=(3, 3),
                                                       layout="NHWC", no_bias=True),
     ParamError, r"layout NHWC is not supported"),
    ("Convolution", [(1, 3, 5, 5), (4, 3, 3, 3)], dict(num_filter=4, kernel=(3, 3),
                                                       stride=(1,), no_bias=True),
     ParamError, r"argument 'stride' \(1,\) must have as many entries"),
    ("Deconvolution", [(1, 3, 5, 5), (3, 4, 3, 3)], dict(num_filter=4, kernel=(3, 3),
                                                         stride=(2, 2), adj=(2, 0)),
     ParamError, r"'adj' \(2, 0\) must be smaller than 'stride'"),
    ("Deconvolution", [(1, 3, 5, 5), (4, 3, 3, 3)], dict(num_filter=4, kernel=(3, 3)),
     ShapeError, r"Deconvolution: argument 'weight' has shape \(4, 3, 3, 3\), expected "
                 r"\(3, 4, 3, 3\)"),
    ("Deconvolution", [(1, 3, 2, 2), (3, 4, 3, 3)], dict(num_filter=4, kernel=(3, 3),
                                                         target_shape=(9, 9)),
     ShapeError, r"target_shape \(9, 9\) is too big"),
    ("_backward_Convolution", [(1, 4, 2, 2), (1, 3, 5, 5), (4, 3, 3, 3)],
     dict(num_filter=4, kernel=(3, 3)), ShapeError,
     r"_backward_Convolution: argument 'out_grad' has shape \(1, 4, 2, 2\), expected the "
     r"forward's output shape \(1, 4, 3, 3\)"),
])
def test_errors(op, ins, kw, err, msg):
    with pytest.raises(err, match=msg):
        invoke(op, [np.zeros(s, np.float32) for s in ins], **kw)


def test_integer_dtype_is_an_error():
    with pytest.raises(TypeInferenceError, match="Convolution: argument 'data' has dtype int32; "
                                                 "supported: float16"):
        invoke("Convolution", [np.zeros((1, 1, 3, 3), np.int32), np.zeros((1, 1, 1, 1),
                                                                           np.int32)],
               kernel=(1, 1), num_filter=1, no_bias=True)


# ----------------------------------------------- the CPU kernels' own paths
# ops/nn/conv_cpu.h: the GEMM's instruction sets, 1-3 threads, both splits of
# the weight grad, float16 in every pass, and the workspace (TEMP_SPACE).
from mx_engine.base import MXNetError  # noqa: E402
from mx_ops.ops.nn import _conv_cpu  # noqa: E402


@pytest.fixture(params=_conv_cpu.available_isas())
def isa(request):
    old = _conv_cpu.set_isa(request.param)
    yield request.param
    _conv_cpu.set_isa(old)


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    old = _conv_cpu.set_max_threads(request.param)
    yield request.param
    _conv_cpu.set_max_threads(old)


PATH_CASES = [  # big enough to be split over threads (2**17 multiply-adds and up)
    ((5, 3, 13, 11), 8, dict(kernel=(3, 3), pad=(1, 1))),
    ((2, 8, 12, 20), 12, dict(kernel=(3, 2), stride=(2, 3), dilate=(2, 1), pad=(2, 0),
                              num_group=4)),
    ((1, 6, 40), 10, dict(kernel=(5,), stride=(2,), pad=(3,), num_group=2)),   # 1 sample
    ((3, 4, 9, 70), 16, dict(kernel=(1, 1))),
]


def _all_grads(x, w, b, kw, nf, dtype):
    y = ref_conv(x, w, b, **_ref_kw(kw))
    dy = np.random.default_rng(5).standard_normal(y.shape).astype(dtype)
    return y, dy, ref_conv_grads(x, w, dy, **_ref_kw(kw))


@pytest.mark.parametrize("case", range(len(PATH_CASES)))
def test_paths_every_isa_and_thread_count(case, isa, threads):
    shape, nf, kw = PATH_CASES[case]
    for dtype in (np.float32, np.float64):
        x, w, b = _arrays(np.random.default_rng(case), shape, nf, kw, dtype)
        y, dy, want = _all_grads(x, w, b, kw, nf, dtype)
        np.testing.assert_allclose(invoke("Convolution", [x, w, b], num_filter=nf, **kw), y,
                                   **_tol(dtype))
        for g, e in zip(invoke("_backward_Convolution", [dy, x, w], num_filter=nf, **kw), want):
            np.testing.assert_allclose(g, e, **_tol(dtype))


@pytest.mark.parametrize("threads", [1, 2, 3], indirect=True)
def test_weight_grad_splits(threads):
    """Sample chunks with partial sums (small weights), and weight column
    blocks when the partials would pass kConvPartialElems (1M elements)."""
    rng = np.random.default_rng(8)
    for shape, nf in (((8, 8, 12, 12), 16), ((3, 160, 4, 4), 256)):   # 256 x 1440: columns
        kw = dict(kernel=(3, 3), pad=(1, 1), no_bias=True)
        o, p, shapes = _sizes("Convolution", shape, nf, kw)
        pl = _conv_cpu.plan("wgrad", o.pack_params(p, shapes), shape, (shape[0], nf) + shape[2:],
                            threads)
        assert pl["split_k"] == (threads > 1 and nf == 16 or threads == 2 and nf == 256)
        x, w, _ = _arrays(rng, shape, nf, kw, np.float64)
        _, dy, want = _all_grads(x, w, None, kw, nf, np.float64)
        base = rng.standard_normal(w.shape)
        out = [np.zeros(x.shape), base.copy()]
        invoke("_backward_Convolution", [dy, x, w], out=out, req=["null", "add"], num_filter=nf,
               **kw)
        np.testing.assert_allclose(out[1], base + want[1], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("nf", [8, 32, 64, 96])
def test_weight_grad_orientations(threads, nf, isa):
    """The weight grad's GEMM takes the filters as its rows (F-major) where
    as columns they would fill the register tile's NR-wide panels poorly,
    else the weight's columns; both, split over samples or over weight
    columns (one thread), match the reference in every dtype and req."""
    rng = np.random.default_rng(nf)
    shape, kw = (3, 5, 9, 10), dict(kernel=(3, 3), pad=(1, 1), no_bias=True)
    o, p, shapes = _sizes("Convolution", shape, nf, kw)
    pl = _conv_cpu.plan("wgrad", o.pack_params(p, shapes), shape, (shape[0], nf) + shape[2:],
                        threads)
    nr = {"generic": 8, "avx2": 16, "avx512": 64}[isa]     # float32 panel width
    assert pl["f_major"] == (-(-nf // nr) * nr * 8 > -(-nf // 6) * 6 * 9)
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4), (np.float16, 2e-2)):
        x, w, _ = _arrays(rng, shape, nf, kw, np.float64)
        _, dy, want = _all_grads(x, w, None, kw, nf, np.float64)
        base = rng.standard_normal(w.shape)
        ins = [a.astype(dtype) for a in (dy, x, w)]
        got = invoke("_backward_Convolution", ins, req=["null", "write"], num_filter=nf, **kw)
        np.testing.assert_allclose(got[1], want[1], rtol=tol, atol=tol * 10)
        out = [np.zeros(x.shape, dtype), base.astype(dtype)]
        invoke("_backward_Convolution", ins, out=out, req=["null", "add"], num_filter=nf, **kw)
        np.testing.assert_allclose(out[1], base.astype(dtype) + want[1], rtol=tol,
                                   atol=tol * 10)


def test_plans_feed_every_thread():
    """Few samples are split further (position chunks, channel blocks), so
    a team has about four items per thread."""
    shape, nf, kw = (1, 32, 30, 30), 16, dict(kernel=(3, 3), pad=(1, 1))
    o, p, shapes = _sizes("Convolution", shape, nf, kw)
    packed = o.pack_params(p, shapes)
    for name in ("fwd", "dgrad"):
        pl = _conv_cpu.plan(name, packed, shape, (1, 16, 30, 30), 2)
        assert pl["threads"] == 2 and pl["items"] >= 8
    half = _conv_cpu.plan("fwd", packed, shape, (1, 16, 30, 30), 2, "float16")
    assert half["chunk"] * 16 <= 1 << 16


@pytest.mark.parametrize("case", range(len(PATH_CASES)))
def test_float16_every_pass(case, isa):
    """float16 widens in the packers and narrows once: it matches float32
    on the float16 values, in Convolution, Deconvolution and both backward
    ops, with req write and add."""
    shape, nf, kw = PATH_CASES[case]
    rng = np.random.default_rng(30 + case)
    x, w, b = _arrays(rng, shape, nf, kw, np.float16)
    wide = [a.astype(np.float32) for a in (x, w, b)]
    y = invoke("Convolution", [x, w, b], num_filter=nf, **kw)
    np.testing.assert_allclose(y.astype(np.float32),
                               invoke("Convolution", wide, num_filter=nf, **kw), rtol=2e-2,
                               atol=2e-2)
    dy = rng.standard_normal(y.shape).astype(np.float16)
    dkw = dict(kw, no_bias=False, num_filter=shape[1])        # Deconvolution back to x's channels
    bd = rng.standard_normal(shape[1]).astype(np.float16)
    yd = invoke("Deconvolution", [dy, w, bd], **dkw)
    ogd = rng.standard_normal(yd.shape).astype(np.float16)
    for op, ins, opkw in (("_backward_Convolution", [dy, x, w], dict(kw, num_filter=nf)),
                          ("Deconvolution", [dy, w, bd], dkw),
                          ("_backward_Deconvolution", [ogd, dy, w], dkw)):
        want = invoke(op, [a.astype(np.float32) for a in ins], **opkw)
        want = want if isinstance(want, list) else [want]
        got = invoke(op, ins, **opkw)
        got = got if isinstance(got, list) else [got]
        base = [rng.standard_normal(g.shape).astype(np.float16) for g in got]
        added = [a.copy() for a in base]
        invoke(op, ins, out=added if len(added) > 1 else added[0], req="add", **opkw)
        for g, a, bs, e in zip(got, added, base, want):
            assert g.dtype == np.float16
            scale = 1 + np.abs(e).max()
            np.testing.assert_allclose(g.astype(np.float32), e, rtol=2e-2, atol=2e-2 * scale)
            np.testing.assert_allclose(a.astype(np.float32), bs.astype(np.float32) + e,
                                       rtol=2e-2, atol=2e-2 * scale)


def _sizes(op, shape, nf, kw):
    o = get(op)
    p = o.parse_params(dict(kw, num_filter=nf))
    x = np.zeros(shape, np.float32)
    shapes = [x.shape, (nf, shape[1] // kw.get("num_group", 1)) + kw["kernel"]]
    if not p["no_bias"]:
        shapes.append((nf,))
    return o, p, shapes


def test_workspace_is_small_and_sized_by_the_op():
    """The workspace holds packing blocks per thread, not a column matrix:
    here well under the 9x-the-image column buffer of im2col."""
    shape, nf, kw = (8, 64, 56, 56), 64, dict(kernel=(3, 3), pad=(1, 1))
    o, p, shapes = _sizes("Convolution", shape, nf, kw)
    nbytes = o.workspace(p, shapes)
    col_buffer = 64 * 9 * 56 * 56 * 4
    assert 0 < nbytes < col_buffer
    one = _conv_cpu.workspace_bytes("Convolution", o.pack_params(p, shapes), shape,
                                    (8, 64, 56, 56), threads=1)
    assert one <= nbytes
    back = get("_backward_Convolution")
    assert back.workspace(p, [(8, 64, 56, 56)] + shapes[:2]) > 0


@pytest.mark.parametrize("op", ["Convolution", "_backward_Convolution", "Deconvolution",
                                "_backward_Deconvolution"])
def test_a_short_workspace_means_fewer_threads_then_a_clear_error(op, monkeypatch):
    shape, nf, kw = (6, 4, 16, 16), 8, dict(kernel=(3, 3), pad=(1, 1), no_bias=True)
    rng = np.random.default_rng(12)
    deconv = "Deconv" in op
    x, w, _ = _arrays(rng, shape, nf, kw, np.float32, deconv=deconv)
    fwd = op.replace("_backward_", "")
    ins = [x, w]
    if op.startswith("_backward_"):
        y = invoke(fwd, [x, w], num_filter=nf, **kw)
        ins = [rng.standard_normal(y.shape).astype(np.float32), x, w]
    want = invoke(op, ins, num_filter=nf, **kw)
    opdef = get(op)
    full = opdef.workspace
    old = _conv_cpu.set_max_threads(3)
    try:
        shapes = [a.shape for a in ins]
        p = opdef.parse_params(dict(kw, num_filter=nf))
        # Sized for one thread while three may run: the kernel plans one.
        one = _one_thread_bytes(op, p, shapes)
        assert one < full(p, shapes)
        monkeypatch.setattr(opdef, "workspace", lambda p, s: one)
        got = invoke(op, ins, num_filter=nf, **kw)
        for g, e in zip(got if isinstance(got, list) else [got],
                        want if isinstance(want, list) else [want]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        monkeypatch.setattr(opdef, "workspace", lambda p, s: 64)
        with pytest.raises(MXNetError, match=rf"^{op}: the workspace \(TEMP_SPACE\) holds 64 "
                                             r"bytes, but this call needs \d+ bytes even on one "
                                             r"thread"):
            invoke(op, ins, num_filter=nf, **kw)
    finally:
        _conv_cpu.set_max_threads(old)


def _one_thread_bytes(op, p, shapes):
    """The op's workspace size for one thread, from the same planner."""
    old = _conv_cpu.set_max_threads(1)
    try:
        return get(op).workspace(p, shapes)
    finally:
        _conv_cpu.set_max_threads(old)


def test_gemm_isa_choice():
    assert _conv_cpu.isa() in _conv_cpu.available_isas()
    assert _conv_cpu.available_isas()[0] == "generic"
    with pytest.raises(ValueError, match="instruction set 'avx1024' is not available here"):
        _conv_cpu.set_isa("avx1024")


def test_concurrent_callers_share_the_team():
    """Kernels called from several threads at once (engine workers): one
    job runs on the team, the others on their calling thread; many short
    jobs in a row exercise the team's hand-over (src/team.h)."""
    import threading
    shape, nf, kw = (6, 4, 12, 12), 8, dict(kernel=(3, 3), pad=(1, 1))
    rng = np.random.default_rng(40)
    x, w, b = _arrays(rng, shape, nf, kw, np.float32)
    want = invoke("Convolution", [x, w, b], num_filter=nf, **kw)
    dy = rng.standard_normal(want.shape).astype(np.float32)
    gwant = invoke("_backward_Convolution", [dy, x, w], num_filter=nf, **kw)
    errors = []
    old = _conv_cpu.set_max_threads(3)
    want = invoke("Convolution", [x, w, b], num_filter=nf, **kw)
    gwant = invoke("_backward_Convolution", [dy, x, w], num_filter=nf, **kw)

    def worker():
        # Each thread's OpenMP max-threads is its own: the same plans (and
        # so bitwise the same sums) need the same count everywhere.
        _conv_cpu.set_max_threads(3)
        try:
            for _ in range(60):
                np.testing.assert_array_equal(invoke("Convolution", [x, w, b], num_filter=nf,
                                                     **kw), want)
                for g, e in zip(invoke("_backward_Convolution", [dy, x, w], num_filter=nf,
                                       **kw), gwant):
                    np.testing.assert_array_equal(g, e)
        except Exception as exc:            # reported below
            errors.append(exc)
    try:
        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        worker()
        for t in threads:
            t.join()
    finally:
        _conv_cpu.set_max_threads(old)
    assert not errors, errors[0]
