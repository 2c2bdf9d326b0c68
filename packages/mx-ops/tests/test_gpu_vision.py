"""GPU twins of the vision family (ROIPooling, _contrib_ROIAlign,
_contrib_BilinearResize2D, _contrib_AdaptiveAvgPooling2D and their
backwards) against their CPU kernels: the same invoke on NumPy and on CuPy
arrays, for every float dtype and every req.  Skipped without CuPy and a
device."""
import importlib.util

import numpy as np
import pytest

from mx_ops import invoke, registry
from mx_ops.core.registry import MXNetError

FLOATS = ["float32", "float64", "float16"]
TOL = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}

ROIS = np.array([[0, 0.5, 0.5, 3.5, 2.5], [1, -2, -3, 1.4, 10], [1, 4.6, 3, 2, 1],
                 [0, 2.5, 1.5, 2.5, 1.5], [1, 0, 0, 11, 9], [2, 0, 0, 3, 3],
                 [-1, 0, 0, 3, 3], [0, 1.2, 0.7, 5.9, 4.4]])
ALIGNED_ROIS = ROIS[[0, 1, 4, 5, 6, 7]]        # aligned=True refuses empty boxes


def _data(t, c=3):
    """Distinct values (exact in float16): the maxima do not tie."""
    return (np.random.default_rng(0).permutation(2 * c * 6 * 7).reshape(2, c, 6, 7) / 8).astype(t)


def _g(shape, t, seed=1):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(t)


POOL = {"pooled_size": (2, 3), "spatial_scale": 0.75}
ALIGN = [{"pooled_size": (2, 3), "spatial_scale": 1.0},
         {"pooled_size": (2, 2), "spatial_scale": 0.6, "sample_ratio": 2,
          "position_sensitive": True, "aligned": True}]


def _pool_back(t):
    x, rois = _data(t), ROIS.astype(t)
    _, idx = invoke("ROIPooling", [x, rois], **POOL)
    return [_g(idx.shape, t), x, rois, idx]


def _align_back(kw):
    def make(t):
        rois = (ALIGNED_ROIS if kw.get("aligned") else ROIS).astype(t)
        x = _data(t, 12 if kw.get("position_sensitive") else 3)
        out = invoke("_contrib_ROIAlign", [x, rois], **kw)
        return [_g(out.shape, t), x, rois]
    return make


CASES = [("ROIPooling", lambda t: [_data(t), ROIS.astype(t)], POOL),
         ("_backward_ROIPooling", _pool_back, POOL)]
for _kw in ALIGN:
    CASES.append(("_contrib_ROIAlign", lambda t, kw=_kw: [
        _data(t, 12 if kw.get("position_sensitive") else 3),
        (ALIGNED_ROIS if kw.get("aligned") else ROIS).astype(t)], _kw))
    CASES.append(("_backward_ROIAlign", _align_back(_kw), _kw))
RESIZE = [{"height": 9, "width": 4}, {"height": 3, "width": 11, "align_corners": False},
          {"mode": "to_odd_up"}]
for _kw in RESIZE:
    CASES.append(("_contrib_BilinearResize2D", lambda t: [_g((2, 3, 6, 7), t)], _kw))
    CASES.append(("_backward_contrib_BilinearResize2D", lambda t, kw=_kw: [
        _g(invoke("_contrib_BilinearResize2D", [np.zeros((2, 3, 6, 7))], **kw).shape, t, 2),
        _g((2, 3, 6, 7), t)], _kw))
CASES.append(("_backward_contrib_BilinearResize2D", lambda t: [
    _g((2, 3, 5, 2), t), _g((2, 3, 6, 7), t), _g((1, 1, 5, 2), t)], {"mode": "like"}))
for _size, _out in (((3, 2), (3, 2)), ((9, 11), (9, 11))):
    CASES.append(("_contrib_AdaptiveAvgPooling2D", lambda t: [_g((2, 3, 6, 7), t)],
                  {"output_size": _size}))
    CASES.append(("_backward_contrib_AdaptiveAvgPooling2D", lambda t, o=_out: [
        _g((2, 3) + o, t, 2), _g((2, 3, 6, 7), t)], {"output_size": _size}))
PARAMS = [(op, make, kw, t) for op, make, kw in CASES for t in FLOATS]


def _check(got, want, dtype):
    import cupy
    got = cupy.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.gpu
@pytest.mark.parametrize("req", ["write", "add", "null"])
@pytest.mark.parametrize("op, make, kw, dtype", PARAMS)
def test_gpu_matches_cpu(op, make, kw, dtype, req):
    import cupy
    inputs = make(dtype)
    want = invoke(op, inputs, **kw)
    want = want if isinstance(want, list) else [want]
    bases = [_g(w.shape, w.dtype, 9 + i) for i, w in enumerate(want)]
    cpu, gpu = [b.copy() for b in bases], [cupy.asarray(b) for b in bases]
    invoke(op, inputs, out=cpu, req=req, **kw)
    invoke(op, [cupy.asarray(x) for x in inputs], out=gpu, req=req, **kw)
    for g, c in zip(gpu, cpu):
        _check(g, c, dtype)


@pytest.mark.gpu
def test_gpu_roi_align_refuses_empty_aligned_boxes():
    import cupy
    with pytest.raises(MXNetError, match="^_contrib_ROIAlign: with aligned=True every box "
                                         "needs a positive width"):
        invoke("_contrib_ROIAlign", [cupy.zeros((1, 1, 4, 4)), cupy.asarray([[0, 1, 1, 1, 3.]])],
               pooled_size=(2, 2), spatial_scale=1.0, aligned=True)


def test_gpu_computes_registered_where_cupy_is():
    have = importlib.util.find_spec("cupy") is not None
    for name in ("ROIPooling", "_backward_ROIPooling", "_contrib_ROIAlign",
                 "_backward_ROIAlign", "_contrib_BilinearResize2D",
                 "_backward_contrib_BilinearResize2D", "_contrib_AdaptiveAvgPooling2D",
                 "_backward_contrib_AdaptiveAvgPooling2D"):
        assert ("gpu" in registry.get(name).compute) == have, name
