"""The vision family against NumPy references and MXNet 1.9.1's outputs
(tests/data/vision_mxnet191.npz, make_vision_reference.py): ROIPooling
(rounding of the boxes, boxes past the image, reversed boxes, empty bins,
batch indices outside the batch) and its backward, every dtype and req,
central finite differences through the gradient maker, partial shape
inference and clear errors."""
import json
import math
import os

import numpy as np
import pytest

from mx_ops import get, infer_shapes, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import MXNetError, ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DTYPES = ["float16", "float32", "float64"]
DATA = os.path.join(os.path.dirname(__file__), "data", "vision_mxnet191.npz")


def _round(v):
    """std::round: half away from zero."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def roi_pool_ref(x, rois, pooled_size, spatial_scale):
    """(output, maxidx) of ROIPooling, bin by bin; the bins' edges in the
    kernel's compute type (float for float16), as MXNet's DType."""
    acc = np.float64 if x.dtype == np.float64 else np.float32
    n, c, h, w = x.shape
    ph_, pw_ = pooled_size
    out = np.zeros((len(rois), c, ph_, pw_))
    idx = np.full(out.shape, -1.0)
    for r, box in enumerate(rois.astype(np.float64)):
        b = int(box[0])
        if not 0 <= b < n:
            continue
        scale = acc(np.float32(spatial_scale))          # a float parameter in MXNet
        x1, y1, x2, y2 = (_round(float(acc(v) * scale)) for v in box[1:])
        bh, bw = acc(max(y2 - y1 + 1, 1)) / acc(ph_), acc(max(x2 - x1 + 1, 1)) / acc(pw_)
        for ph in range(ph_):
            for pw in range(pw_):
                hs, he = (min(max(int(v) + y1, 0), h) for v in (np.floor(acc(ph) * bh),
                                                                np.ceil(acc(ph + 1) * bh)))
                ws, we = (min(max(int(v) + x1, 0), w) for v in (np.floor(acc(pw) * bw),
                                                                np.ceil(acc(pw + 1) * bw)))
                if he <= hs or we <= ws:
                    continue
                region = x[b, :, hs:he, ws:we].reshape(c, -1).astype(np.float64)
                k = region.argmax(axis=1)
                out[r, :, ph, pw] = region[np.arange(c), k]
                idx[r, :, ph, pw] = (hs + k // (we - ws)) * w + ws + k % (we - ws)
    return out, idx


def roi_pool_grad_ref(g, x_shape, rois, idx):
    n, c, h, w = x_shape
    dx = np.zeros((n, c, h * w))
    for r, box in enumerate(rois):
        b = int(box[0])
        if not 0 <= b < n:
            continue
        for ch in range(c):
            for i, a in zip(g[r, ch].reshape(-1), idx[r, ch].reshape(-1)):
                if a >= 0:
                    dx[b, ch, int(a)] += i
    return dx.reshape(x_shape)


ROIS = np.array([[0, 0.5, 0.5, 3.5, 2.5], [1, -2, -3, 1.4, 10], [1, 4.6, 3, 2, 1],
                 [0, 2.5, 1.5, 2.5, 1.5], [1, 0, 0, 11, 9], [2, 0, 0, 3, 3],
                 [-1, 0, 0, 3, 3], [0, 1.2, 0.7, 5.9, 4.4]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pooled_size, scale", [((2, 3), 1.0), ((3, 2), 0.5), ((1, 1), 0.75)])
def test_roi_pooling(nn, dtype, pooled_size, scale):
    rng = np.random.default_rng(3)
    # distinct values, so the argmax does not depend on rounding to dtype
    x = rng.permutation(2 * 3 * 6 * 7).reshape(2, 3, 6, 7).astype(dtype) / 8
    rois = ROIS.astype(dtype)
    params = dict(pooled_size=pooled_size, spatial_scale=scale)
    out, idx = roi_pool_ref(x, rois, pooled_size, scale)
    nn.check_reqs("ROIPooling", [x, rois], [out, idx], params, dtype)
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = roi_pool_grad_ref(g.astype(np.float64), x.shape, rois, idx)
    nn.check_reqs("_backward_ROIPooling", [g, x, rois, idx.astype(dtype)],
                  [dx, np.zeros(rois.shape)], params, dtype)


def test_roi_pooling_large_parallel():
    """Enough planes to split across the workers; the backward's channel
    split against the reference, with overlapping boxes."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 16, 20, 24)).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 2, (64, 1)), rng.uniform(-4, 26, (64, 4))], axis=1)
    rois = rois.astype(np.float32)
    out, idx = invoke("ROIPooling", [x, rois], pooled_size=(3, 4), spatial_scale=0.9)
    want, want_idx = roi_pool_ref(x, rois, (3, 4), 0.9)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(idx, want_idx)
    g = rng.standard_normal(out.shape).astype(np.float32)
    dx, _ = invoke("_backward_ROIPooling", [g, x, rois, idx], pooled_size=(3, 4),
                   spatial_scale=0.9)
    np.testing.assert_allclose(dx, roi_pool_grad_ref(g, x.shape, rois, idx), rtol=1e-5,
                               atol=1e-5)


def test_roi_pooling_nan_and_ties():
    x = np.array([[[[np.nan, 1.0], [1.0, np.nan]]]], np.float32)
    out, idx = invoke("ROIPooling", [x, np.array([[0, 0, 0, 1, 1]], np.float32)],
                      pooled_size=(1, 1), spatial_scale=1.0)
    assert out.item() == 1.0 and idx.item() == 1.0          # the first maximum
    x[:] = np.nan
    out, idx = invoke("ROIPooling", [x, np.array([[0, 0, 0, 1, 1]], np.float32)],
                      pooled_size=(1, 1), spatial_scale=1.0)
    assert out.item() == -np.finfo(np.float32).max and idx.item() == -1


# The backward of each operator and its inputs beyond the head gradient:
# the forward's inputs, then its hidden outputs.
BACKWARD = {"ROIPooling": "_backward_ROIPooling", "_contrib_ROIAlign": "_backward_ROIAlign",
            "_contrib_BilinearResize2D": "_backward_contrib_BilinearResize2D",
            "_contrib_AdaptiveAvgPooling2D": "_backward_contrib_AdaptiveAvgPooling2D"}


def _mxnet_cases():
    ref = np.load(DATA)
    return ref, json.loads(str(ref["index"]))


@pytest.mark.parametrize("case", sorted(_mxnet_cases()[1]))
def test_against_mxnet(case):
    ref, index = _mxnet_cases()
    info = index[case]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in info["params"].items()}
    ins = [ref[f"{case}/in{i}"] for i in range(info["nin"])]
    outs = invoke(info["op"], ins, **params)
    outs = outs if isinstance(outs, list) else [outs]
    np.testing.assert_allclose(outs[0], ref[f"{case}/out"], rtol=1e-6, atol=1e-6)
    back = invoke(BACKWARD[info["op"]], [ref[f"{case}/g"]] + ins + outs[1:], **params)
    back = back if isinstance(back, list) else [back]
    for i in range(info["nin"]):
        np.testing.assert_allclose(back[i], ref[f"{case}/grad{i}"], rtol=1e-6, atol=1e-6)


def test_roi_pooling_numeric_gradient():
    rng = np.random.default_rng(2)
    x = rng.permutation(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) / 10.0
    rois = np.array([[0, 0, 0, 3, 2], [1, 1, 1, 4, 4], [0, 2, 1, 2, 4]], np.float64)
    grads = check_numeric_gradient("ROIPooling", [x, rois], check_inputs=[0],
                                   pooled_size=(2, 2), spatial_scale=1.0)
    np.testing.assert_array_equal(grads[1], np.zeros(rois.shape))


def test_roi_pooling_inference_and_errors():
    op = get("ROIPooling")
    p = op.parse_call({"pooled_size": "(2, 3)", "spatial_scale": "0.5"}, 2)
    assert op.infer_shape(p, [(2, 4, 8, 8), (7, 5)]) == [(7, 4, 2, 3)] * 2
    assert op.visible_output_count(p) == 1 and op.input_names(p) == ["data", "rois"]
    # MXNet: the output (num_rois, C) + pooled_size as soon as the ranks are known
    ins, outs = infer_shapes("ROIPooling", {"pooled_size": (2, 2), "spatial_scale": 0.5},
                             [(2, 3, 0, 0), (0, 5)])
    assert outs[0] == (0, 3, 2, 2)
    with pytest.raises(ShapeError, match=r"ROIPooling: argument 'rois' should be a 2D tensor "
                                         r"of shape \(num_rois, 5\), got shape \(3, 4\)"):
        invoke("ROIPooling", [np.zeros((1, 1, 4, 4), np.float32), np.zeros((3, 4), np.float32)],
               pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(ShapeError, match="ROIPooling: argument 'data' should be a 4D tensor"):
        invoke("ROIPooling", [np.zeros((1, 4, 4), np.float32), np.zeros((3, 5), np.float32)],
               pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(ShapeError, match="'pooled_size' must be two positive sizes"):
        invoke("ROIPooling", [np.zeros((1, 1, 4, 4), np.float32),
                              np.zeros((3, 5), np.float32)], pooled_size=(2,), spatial_scale=1.0)
    with pytest.raises(ParamError, match="spatial_scale"):
        invoke("ROIPooling", [np.zeros((1, 1, 4, 4), np.float32),
                              np.zeros((3, 5), np.float32)], pooled_size=(2, 2), spatial_scale=2.0)
    with pytest.raises(TypeInferenceError, match="ROIPooling: argument 'data' has dtype int32"):
        invoke("ROIPooling", [np.zeros((1, 1, 4, 4), np.int32), np.zeros((3, 5), np.int32)],
               pooled_size=(2, 2), spatial_scale=1.0)


# --- _contrib_ROIAlign ---------------------------------------------------------------------

def _samples(box, h, w, ph_, pw_, scale, ratio, aligned, acc):
    """For each bin (ph, pw): the list of its samples as [(flat offsets),
    (weights)] and the count it averages over (roi_align_cpu.h)."""
    off = acc(0.5) if aligned else acc(0)
    x0, y0 = acc(box[1]) * scale - off, acc(box[2]) * scale - off
    bw, bh = acc(box[3]) * scale - off - x0, acc(box[4]) * scale - off - y0
    if not aligned:
        bw, bh = max(bw, acc(1)), max(bh, acc(1))
    gh = ratio if ratio > 0 else int(np.ceil(bh / acc(ph_)))
    gw = ratio if ratio > 0 else int(np.ceil(bw / acc(pw_)))
    bin_h, bin_w = bh / acc(ph_), bw / acc(pw_)
    bins = {}
    for ph in range(ph_):
        for pw in range(pw_):
            found = []
            for iy in range(gh):
                y = y0 + acc(ph) * bin_h + (acc(iy) + acc(0.5)) * bin_h / acc(gh)
                for ix in range(gw):
                    x = x0 + acc(pw) * bin_w + (acc(ix) + acc(0.5)) * bin_w / acc(gw)
                    if y < -1 or y > h or x < -1 or x > w:
                        continue
                    y, x = max(y, acc(0)), max(x, acc(0))
                    yl, xl = int(y), int(x)
                    if yl >= h - 1:
                        yl = yh = h - 1
                        y = acc(yl)
                    else:
                        yh = yl + 1
                    if xl >= w - 1:
                        xl = xh = w - 1
                        x = acc(xl)
                    else:
                        xh = xl + 1
                    ly, lx = y - acc(yl), x - acc(xl)
                    found.append(((yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh),
                                  ((1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx)))
            bins[ph, pw] = found
    return bins, max(gh * gw, 1)


def roi_align_ref(x, rois, g, pooled_size, spatial_scale, sample_ratio=-1,
                  position_sensitive=False, aligned=False):
    """(output, data gradient for head gradient g) of ROIAlign."""
    acc = np.float64 if x.dtype == np.float64 else np.float32
    scale = acc(np.float32(spatial_scale))
    n, c, h, w = x.shape
    ph_, pw_ = pooled_size
    co = c // (ph_ * pw_) if position_sensitive else c
    out = np.zeros((len(rois), co, ph_, pw_))
    dx = np.zeros((n, c, h * w))
    flat = x.reshape(n, c, h * w).astype(np.float64)
    for r, box in enumerate(rois.astype(np.float64)):
        b = int(box[0])
        if not 0 <= b < n:
            continue
        bins, count = _samples(box, h, w, ph_, pw_, scale, sample_ratio, aligned, acc)
        for (ph, pw), found in bins.items():
            for ch in range(co):
                ci = (ch * ph_ + ph) * pw_ + pw if position_sensitive else ch
                for offs, wts in found:
                    for o, wt in zip(offs, wts):
                        out[r, ch, ph, pw] += float(wt) * flat[b, ci, o] / count
                        dx[b, ci, o] += float(wt) * g[r, ch, ph, pw] / count
    return out, dx.reshape(x.shape)


ALIGN_CASES = [  # (pooled_size, spatial_scale, sample_ratio, position_sensitive, aligned)
    ((2, 3), 1.0, -1, False, False),
    ((3, 2), 0.5, 2, False, True),
    ((2, 2), 0.6, 3, True, False),
    ((1, 1), 0.8, -1, True, True),
]
ALIGN_ROIS = np.array([[0, 0.5, 0.5, 3.5, 2.5], [1, -2, -3, 1.4, 10], [1, 4.6, 3, 4.9, 3.2],
                       [0, 1.25, 0.75, 6.75, 5.25], [1, 0, 0, 11, 9], [3, 0, 0, 2, 2],
                       [-1, 0, 0, 3, 3]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(ALIGN_CASES)))
def test_roi_align(nn, dtype, case):
    size, scale, ratio, psroi, aligned = ALIGN_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal((2, 4 * size[0] * size[1] if psroi else 3, 6, 7)).astype(dtype)
    rois = ALIGN_ROIS.astype(dtype)
    params = dict(pooled_size=size, spatial_scale=scale, sample_ratio=ratio,
                  position_sensitive=psroi, aligned=aligned)
    g = rng.standard_normal((len(rois), 4 if psroi else 3) + size).astype(dtype)
    out, dx = roi_align_ref(x, rois, g.astype(np.float64), **params)
    nn.check_reqs("_contrib_ROIAlign", [x, rois], [out], params, dtype)
    nn.check_reqs("_backward_ROIAlign", [g, x, rois], [dx, np.zeros(rois.shape)], params, dtype)


def test_roi_align_large_parallel():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 12, 20, 24))
    rois = np.concatenate([rng.integers(0, 2, (40, 1)), rng.uniform(-4, 26, (40, 4))], axis=1)
    params = dict(pooled_size=(3, 2), spatial_scale=0.9, sample_ratio=-1,
                  position_sensitive=True, aligned=False)
    g = rng.standard_normal((40, 2, 3, 2))
    out = invoke("_contrib_ROIAlign", [x, rois], **params)
    dx, _ = invoke("_backward_ROIAlign", [g, x, rois], **params)
    want, want_dx = roi_align_ref(x, rois, g, **params)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("aligned, psroi", [(False, False), (True, True)])
def test_roi_align_numeric_gradient(aligned, psroi):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 5, 6))
    rois = np.array([[0, 0.3, 0.6, 3.2, 2.9], [1, 1.1, 0.2, 4.7, 4.4], [0, -1.5, 2, 2, 6]])
    grads = check_numeric_gradient("_contrib_ROIAlign", [x, rois], check_inputs=[0],
                                   pooled_size=(2, 2), spatial_scale=1.0, aligned=aligned,
                                   position_sensitive=psroi, sample_ratio=2)
    np.testing.assert_array_equal(grads[1], np.zeros(rois.shape))


def test_roi_align_inference_and_errors():
    op = get("_contrib_ROIAlign")
    p = op.parse_call({"pooled_size": "(2, 2)", "spatial_scale": "0.5",
                       "position_sensitive": "True"}, 2)
    assert op.infer_shape(p, [(2, 8, 8, 8), (7, 5)]) == [(7, 2, 2, 2)]
    assert p["sample_ratio"] == -1 and p["aligned"] is False
    _, outs = infer_shapes("_contrib_ROIAlign", op.parse_call(
        {"pooled_size": (2, 2), "spatial_scale": 0.5}, 2), [(2, 8, 0, 0), (0, 5)])
    assert outs[0] == (0, 8, 2, 2)              # as MXNet's infer_shape_partial
    with pytest.raises(ShapeError, match="position_sensitive the channels of 'data' \\(3\\) "
                                         "must be a multiple of"):
        invoke("_contrib_ROIAlign", [np.zeros((1, 3, 4, 4)), np.zeros((1, 5))],
               pooled_size=(2, 2), spatial_scale=1.0, position_sensitive=True)
    # MXNet aborts the process here (a failed CHECK); this is an error
    with pytest.raises(MXNetError, match="^_contrib_ROIAlign: with aligned=True every box "
                                         "needs a positive width"):
        invoke("_contrib_ROIAlign", [np.zeros((1, 1, 4, 4)), np.array([[0, 1, 1, 1, 3.0]])],
               pooled_size=(2, 2), spatial_scale=1.0, aligned=True)
    with pytest.raises(TypeInferenceError, match="_contrib_ROIAlign: argument 'data' has dtype"):
        invoke("_contrib_ROIAlign", [np.zeros((1, 1, 4, 4), np.int32),
                                     np.zeros((1, 5), np.int32)],
               pooled_size=(2, 2), spatial_scale=1.0)


# --- _contrib_BilinearResize2D -------------------------------------------------------------

def _weights(n_in, n_out, align):
    """The (n_out, n_in) interpolation matrix of one axis: source positions
    and weights in float32 (MXNet's); an output of size 1 reads index 0."""
    f32 = np.float32
    scale = f32(0) if n_out <= 1 else (f32(n_in - 1) / f32(n_out - 1) if align
                                       else f32(n_in) / f32(n_out))
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = scale * f32(o) if align else max(f32(float(scale) * (o + 0.5) - 0.5), f32(0))
        i0 = int(src)
        i1 = i0 + 1 if i0 < n_in - 1 else i0
        m[o, i0] += 1 - float(src - f32(i0))
        m[o, i1] += float(src - f32(i0))
    return m


def resize_ref(x, oh, ow, align):
    wh, ww = _weights(x.shape[2], oh, align), _weights(x.shape[3], ow, align)
    return np.einsum("oh,nchw,pw->ncop", wh, x.astype(np.float64), ww), wh, ww


RESIZE_CASES = [  # (data shape, params, output height and width)
    ((2, 3, 4, 5), {"height": 7, "width": 9}, (7, 9)),
    ((1, 2, 9, 8), {"height": 4, "width": 3, "align_corners": False}, (4, 3)),
    ((1, 2, 5, 6), {"scale_height": 1.7, "scale_width": 0.6}, (8, 3)),
    ((1, 2, 5, 6), {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5}, (9, 3)),
    ((2, 1, 5, 6), {"mode": "to_even_down"}, (4, 6)),
    ((2, 1, 5, 6), {"mode": "to_even_up", "align_corners": False}, (6, 6)),
    ((2, 1, 5, 6), {"mode": "to_odd_down"}, (5, 5)),
    ((2, 1, 5, 6), {"mode": "to_odd_up"}, (5, 7)),
    ((1, 2, 3, 4), {"height": 1, "width": 1, "align_corners": False}, (1, 1)),
    ((1, 1, 1, 1), {"height": 3, "width": 2}, (3, 2)),
    ((3, 2, 3, 4), {"height": 3, "width": 4}, (3, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(RESIZE_CASES)))
def test_bilinear_resize(nn, dtype, case):
    shape, params, (oh, ow) = RESIZE_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    want, wh, ww = resize_ref(x, oh, ow, params.get("align_corners", True))
    nn.check_reqs("_contrib_BilinearResize2D", [x], [want], params, dtype)
    g = rng.standard_normal(want.shape).astype(dtype)
    dx = np.einsum("oh,ncop,pw->nchw", wh, g.astype(np.float64), ww)
    nn.check_reqs("_backward_contrib_BilinearResize2D", [g, x], [dx], params, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bilinear_resize_like(nn, dtype):
    rng = np.random.default_rng(7)
    x, like = (rng.standard_normal(s).astype(dtype) for s in ((2, 3, 4, 4), (1, 1, 7, 3)))
    want, wh, ww = resize_ref(x, 7, 3, False)
    params = {"mode": "like", "align_corners": False}
    nn.check_reqs("_contrib_BilinearResize2D", [x, like], [want], params, dtype)
    g = rng.standard_normal(want.shape).astype(dtype)
    dx = np.einsum("oh,ncop,pw->nchw", wh, g.astype(np.float64), ww)
    nn.check_reqs("_backward_contrib_BilinearResize2D", [g, x, like], [dx, np.zeros(like.shape)],
                  params, dtype)


def test_bilinear_resize_large_parallel():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 16, 33, 47))
    out = invoke("_contrib_BilinearResize2D", [x], height=70, width=20)
    want, wh, ww = resize_ref(x, 70, 20, True)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(out.shape)
    dx = invoke("_backward_contrib_BilinearResize2D", [g, x], height=70, width=20)
    np.testing.assert_allclose(dx, np.einsum("oh,ncop,pw->nchw", wh, g, ww), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("params", [{"height": 5, "width": 3},
                                    {"height": 2, "width": 7, "align_corners": False}])
def test_bilinear_resize_numeric_gradient(params):
    x = np.random.default_rng(1).standard_normal((2, 2, 4, 5))
    check_numeric_gradient("_contrib_BilinearResize2D", [x], **params)
    like = np.zeros((2, 2, 3, 6))
    grads = check_numeric_gradient("_contrib_BilinearResize2D", [x, like], check_inputs=[0],
                                   mode="like", **params)
    np.testing.assert_array_equal(grads[1], np.zeros(like.shape))


def test_bilinear_resize_inference_and_errors():
    op = get("_contrib_BilinearResize2D")
    p = op.parse_call({"height": "3", "width": "4"}, 1)
    assert op.input_names(p) == ["data"] and p["align_corners"] is True
    assert op.infer_shape(p, [(2, 3, 5, 5)]) == [(2, 3, 3, 4)]
    q = op.parse_call({"mode": "like"}, 2)
    assert op.input_names(q) == ["data", "like"]
    assert get("_backward_contrib_BilinearResize2D").output_names(q) == ["data_grad",
                                                                          "like_grad"]
    # MXNet: (N, C) of data, (H, W) of like, unknowns included
    _, outs = infer_shapes(op, q, [(2, 3, 4, 4), (2, 3, 0, 5)])
    assert outs[0] == (2, 3, 0, 5)
    _, outs = infer_shapes(op, p, [(2, 0, 0, 0)])
    assert outs[0] == (2, 0, 3, 4)
    r = op.parse_call({"mode": "to_odd_up"}, 1)
    _, outs = infer_shapes(op, r, [(2, 3, 0, 4)])
    assert outs[0] == (2, 3, 0, 5)
    # MXNet fails with 'bad optional access'
    with pytest.raises(ParamError, match="scale_height is given without scale_width"):
        invoke("_contrib_BilinearResize2D", [np.zeros((1, 1, 2, 2))], scale_height=2.0)
    with pytest.raises(ParamError, match="mode 'odd_scale' needs both scale_height and"):
        invoke("_contrib_BilinearResize2D", [np.zeros((1, 1, 2, 2))], mode="odd_scale")
    with pytest.raises(ParamError, match="height"):
        invoke("_contrib_BilinearResize2D", [np.zeros((1, 1, 2, 2))], height=0)
    with pytest.raises(ShapeError, match="argument 'data' must be 4-d"):
        invoke("_contrib_BilinearResize2D", [np.zeros((1, 2, 2))], height=2, width=2)
    with pytest.raises(ShapeError, match="is empty; it cannot be resized"):
        invoke("_contrib_BilinearResize2D", [np.zeros((1, 1, 0, 2))], height=2, width=2)
    with pytest.raises(TypeInferenceError, match="argument 'data' has dtype int32"):
        invoke("_contrib_BilinearResize2D", [np.zeros((1, 1, 2, 2), np.int32)], height=2,
               width=2)
    # a scale that truncates to zero gives an empty output, as in MXNet
    assert invoke("_contrib_BilinearResize2D", [np.ones((1, 1, 4, 5))], scale_height=0.1,
                  scale_width=0.1).shape == (1, 1, 0, 0)


# --- _contrib_AdaptiveAvgPooling2D ---------------------------------------------------------

def _windows(n_in, n_out):
    """The (n_out, n_in) averaging matrix of one axis: window [floor(o * n_in
    / n_out), ceil((o + 1) * n_in / n_out)), the quotients in float32."""
    f32 = np.float32
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        lo = int(np.floor(f32(o * n_in) / f32(n_out)))
        hi = int(np.ceil(f32((o + 1) * n_in) / f32(n_out)))
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


ADAPTIVE_CASES = [  # (data shape, output_size, output height and width)
    ((2, 3, 5, 7), (), (1, 1)),
    ((2, 2, 5, 7), (3,), (3, 3)),
    ((1, 2, 9, 7), (2, 4), (2, 4)),
    ((1, 2, 5, 7), (7, 9), (7, 9)),        # more outputs than inputs: windows overlap
    ((3, 1, 13, 11), (5, 3), (5, 3)),
    ((1, 1, 4, 4), (1, 2, 3), (1, 1)),     # as MXNet: a longer tuple gives 1 x 1
    ((1, 2, 4, 6), (4, 6), (4, 6)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(ADAPTIVE_CASES)))
def test_adaptive_avg_pooling(nn, dtype, case):
    shape, size, (oh, ow) = ADAPTIVE_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    mh, mw = _windows(shape[2], oh), _windows(shape[3], ow)
    want = np.einsum("oh,nchw,pw->ncop", mh, x.astype(np.float64), mw)
    params = {"output_size": size}
    nn.check_reqs("_contrib_AdaptiveAvgPooling2D", [x], [want], params, dtype)
    g = rng.standard_normal(want.shape).astype(dtype)
    dx = np.einsum("oh,ncop,pw->nchw", mh, g.astype(np.float64), mw)
    nn.check_reqs("_backward_contrib_AdaptiveAvgPooling2D", [g, x], [dx], params, dtype)


def test_adaptive_avg_pooling_large_parallel():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 16, 37, 29))
    out = invoke("_contrib_AdaptiveAvgPooling2D", [x], output_size=(6, 7))
    mh, mw = _windows(37, 6), _windows(29, 7)
    np.testing.assert_allclose(out, np.einsum("oh,nchw,pw->ncop", mh, x, mw), rtol=1e-12,
                               atol=1e-14)
    g = rng.standard_normal(out.shape)
    dx = invoke("_backward_contrib_AdaptiveAvgPooling2D", [g, x], output_size=(6, 7))
    np.testing.assert_allclose(dx, np.einsum("oh,ncop,pw->nchw", mh, g, mw), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("size", [(2, 3), (5, 7)])
def test_adaptive_avg_pooling_numeric_gradient(size):
    x = np.random.default_rng(2).standard_normal((2, 2, 4, 5))
    check_numeric_gradient("_contrib_AdaptiveAvgPooling2D", [x], output_size=size)


def test_adaptive_avg_pooling_inference_and_errors():
    op = get("_contrib_AdaptiveAvgPooling2D")
    p = op.parse_call({"output_size": "3"}, 1)
    assert op.infer_shape(p, [(2, 4, 8, 8)]) == [(2, 4, 3, 3)]
    assert op.infer_shape(op.parse_call({}, 1), [(2, 4, 8, 8)]) == [(2, 4, 1, 1)]
    _, outs = infer_shapes(op, p, [(0, 3, 0, 0)])
    assert outs[0] == (0, 3, 3, 3)
    # output_size 0 gives an empty output, as in MXNet
    assert invoke(op.name, [np.ones((1, 1, 4, 4))], output_size=(0, 2)).shape == (1, 1, 0, 2)
    with pytest.raises(ShapeError, match="argument 'data' must be 4-d"):
        invoke(op.name, [np.zeros((1, 2, 2))], output_size=2)
    with pytest.raises(ShapeError, match="is empty; it cannot be pooled to"):
        invoke(op.name, [np.zeros((1, 1, 0, 3))], output_size=2)
    with pytest.raises(TypeInferenceError, match="argument 'data' has dtype int32"):
        invoke(op.name, [np.zeros((1, 1, 2, 2), np.int32)], output_size=2)
