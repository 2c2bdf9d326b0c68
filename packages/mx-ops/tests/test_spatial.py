"""GridGenerator, BilinearSampler, SpatialTransformer and Correlation (the spatial family)
against NumPy
references and MXNet 1.9.1's recorded outputs and gradients
(data/spatial_mxnet191.npz): every req of each output (hidden ones
included), the gradient makers against finite differences, shapes,
partial inference, dtypes and errors."""
import json
import os

import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core.partial_infer import infer_shapes
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient, numeric_gradient, symbolic_gradient

DATA = os.path.join(os.path.dirname(__file__), "data", "spatial_mxnet191.npz")
FLOATS = ["float16", "float32", "float64"]


def target_grid(h, w):
    """MXNet's grid_dst rows: x of each column, y of each row (-1 .. 1)."""
    x = -1 + np.arange(w) * (2.0 / (w - 1)) if w > 1 else np.full(w, np.nan)
    y = -1 + np.arange(h) * (2.0 / (h - 1)) if h > 1 else np.full(h, np.nan)
    return np.broadcast_to(x, (h, w)), np.broadcast_to(y[:, None], (h, w))


def grid_reference(data, transform_type, target_shape=(0, 0)):
    """(output, grid_dst) of GridGenerator in float64."""
    data = data.astype(np.float64)
    if transform_type == "affine":
        h, w = target_shape
        x, y = target_grid(h, w)
        dst = np.stack([x.ravel(), y.ravel(), np.ones(h * w)])
        out = np.einsum("nkj,jp->nkp", data.reshape(-1, 2, 3), dst).reshape(-1, 2, h, w)
        return out, dst
    h, w = data.shape[2:]
    cols, rows = np.meshgrid(np.arange(w), np.arange(h))
    out = np.stack([(data[:, 0] + cols) / ((w - 1) / 2) - 1,
                    (data[:, 1] + rows) / ((h - 1) / 2) - 1], axis=1)
    return out, np.stack([cols, rows]).astype(np.float64)


def sampler_reference(data, grid):
    """(output, tmp) of BilinearSampler in float64: four taps, zeros outside."""
    data, grid = data.astype(np.float64), grid.astype(np.float64)
    n, c, h, w = data.shape
    x = (grid[:, 0] + 1) * (w - 1) / 2
    y = (grid[:, 1] + 1) * (h - 1) / 2
    x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
    wx, wy = 1 - (x - x0), 1 - (y - y0)
    out = np.zeros((n, c) + grid.shape[2:])
    b = np.arange(n)[:, None, None]
    for dy, dx, weight in ((0, 0, wy * wx), (0, 1, wy * (1 - wx)), (1, 0, (1 - wy) * wx),
                           (1, 1, (1 - wy) * (1 - wx))):
        xi, yi = x0 + dx, y0 + dy
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        v = data[b, :, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]  # (n, ho, wo, c)
        out += np.moveaxis(v * (weight * inside)[..., None], -1, 1)
    return out, np.moveaxis(grid, 1, -1)


AFFINE = [((3, 6), (4, 5)), ((1, 6), (1, 3)), ((2, 6), (7, 2)), ((5, 6), (33, 40))]


@pytest.mark.parametrize("shape, target", AFFINE)
def test_grid_generator_affine(nn, shape, target):
    theta = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    params = dict(transform_type="affine", target_shape=target)
    want = grid_reference(theta, "affine", target)
    if 1 in target:           # MXNet's (n - 1) = 0 makes the grid nan
        out = invoke("GridGenerator", [theta], **params)
        assert np.isnan(out[0]).all()
        return
    nn.check_reqs("GridGenerator", [theta], want, params, "float32")


@pytest.mark.parametrize("shape", [(2, 2, 3, 4), (1, 2, 5, 2), (3, 2, 40, 50)])
def test_grid_generator_warp(nn, shape):
    flow = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 3
    params = dict(transform_type="warp", target_shape=(9, 9))  # ignored for warp
    nn.check_reqs("GridGenerator", [flow], grid_reference(flow, "warp"), params, "float32")


def _linear_gradient(op, x, **params):
    """The maker's gradient of a linear float32 operator against central
    differences (exact up to rounding for a linear map, so a large step)."""
    outs = invoke(op, [x], **params)
    og = [np.random.default_rng(2).uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
    og[1:] = [np.zeros_like(o) for o in og[1:]]          # hidden outputs take none
    got = symbolic_gradient(op, [x], og, **params)[0]
    want = numeric_gradient(op, [x], og, eps=0.25, **params)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return og[0], got


@pytest.mark.parametrize("params, shape", [
    (dict(transform_type="affine", target_shape=(3, 4)), (2, 6)),
    (dict(transform_type="warp"), (2, 2, 3, 4))])
def test_grid_generator_gradient(nn, params, shape):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    og, got = _linear_gradient("GridGenerator", x, **params)
    # the backward under every req, against the adjoint in NumPy
    if params["transform_type"] == "affine":
        _, dst = grid_reference(x, "affine", params["target_shape"])
        want = np.einsum("nkp,jp->nkj", og.reshape(2, 2, -1).astype(np.float64), dst)
        want = want.reshape(shape)
    else:
        h, w = shape[2:]
        want = og / np.array([(w - 1) / 2, (h - 1) / 2]).reshape(1, 2, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    nn.check_reqs("_backward_GridGenerator", [og], [want], params, "float32")


def _grids(rng, n, ho, wo, reach=1.2):
    return rng.uniform(-reach, reach, (n, 2, ho, wo))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dshape, gshape", [((2, 3, 5, 6), (4, 7)), ((1, 1, 1, 1), (2, 3)),
                                            ((3, 2, 4, 4), (4, 4)), ((4, 8, 30, 33), (31, 29))])
def test_bilinear_sampler(nn, dtype, dshape, gshape):
    rng = np.random.default_rng(sum(dshape))
    data = rng.standard_normal(dshape).astype(dtype)
    grid = _grids(rng, dshape[0], *gshape).astype(dtype)
    nn.check_reqs("BilinearSampler", [data, grid], sampler_reference(data, grid), {}, dtype)


def test_bilinear_sampler_exact_points():
    """Grid points on pixels copy them; x = 1 is the last column, its right tap outside."""
    data = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    grid = np.array([-1, -1 / 3, 1 / 3, 1, -1, 0, 1, 1], np.float32).reshape(1, 2, 1, 4)
    out = invoke("BilinearSampler", [data, grid])[0]
    np.testing.assert_allclose(out.ravel(), [0, 5, 10, 11], atol=1e-5)
    far = np.full((1, 2, 1, 1), 5.0, np.float32)
    assert invoke("BilinearSampler", [data, far])[0].item() == 0


def test_bilinear_sampler_gradient():
    rng = np.random.default_rng(4)
    data = rng.standard_normal((2, 2, 4, 5))
    grid = _grids(rng, 2, 3, 3, reach=1.1)
    check_numeric_gradient("BilinearSampler", [data, grid], eps=1e-6, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
def test_bilinear_sampler_backward_reqs(nn, dtype):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((2, 3, 4, 5))
    grid = _grids(rng, 2, 3, 4)
    og = rng.uniform(-1, 1, (2, 3, 3, 4))
    want = symbolic_gradient("BilinearSampler", [data, grid], [og, np.zeros((2, 3, 4, 2))])
    args = [a.astype(dtype) for a in (og, data, grid)]
    nn.check_reqs("_backward_BilinearSampler", args, want, {}, dtype)


_ST = dict(transform_type="affine", sampler_type="bilinear")


def _loc(rng, n):
    """Near-identity affine maps (a localisation net's usual start) with some reach outside."""
    return np.array([1, 0, 0, 0, 1, 0]) + rng.uniform(-0.4, 0.4, (n, 6))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dshape, target", [((2, 3, 5, 6), (4, 7)), ((1, 2, 3, 3), (6, 5)),
                                            ((3, 4, 24, 20), (17, 23))])
def test_spatial_transformer(nn, dtype, dshape, target):
    rng = np.random.default_rng(sum(dshape))
    data = rng.standard_normal(dshape).astype(dtype)
    loc = _loc(rng, dshape[0]).astype(dtype)
    grid, dst = grid_reference(loc, "affine", target)
    # the sampling grid is held in the dtype, as in MXNet
    out, _ = sampler_reference(data, grid.astype(dtype))
    nn.check_reqs("SpatialTransformer", [data, loc], [out, dst, grid],
                  dict(target_shape=target, **_ST), dtype)


def test_spatial_transformer_gradient():
    rng = np.random.default_rng(6)
    data, loc = rng.standard_normal((2, 2, 4, 5)), _loc(rng, 2)
    check_numeric_gradient("SpatialTransformer", [data, loc], eps=1e-6, rtol=1e-5, atol=1e-7,
                           target_shape=(3, 4), **_ST)


@pytest.mark.parametrize("dtype", FLOATS)
def test_spatial_transformer_backward_reqs(nn, dtype):
    rng = np.random.default_rng(7)
    data, loc = rng.standard_normal((2, 3, 4, 5)), _loc(rng, 2)
    og = rng.uniform(-1, 1, (2, 3, 3, 4))
    params = dict(target_shape=(3, 4), **_ST)
    want = symbolic_gradient("SpatialTransformer", [data, loc],
                             [og, np.zeros((3, 12)), np.zeros((2, 2, 3, 4))], **params)
    # the same as GridGenerator's gradient of the sampler's grid gradient
    grid = invoke("GridGenerator", [loc.astype(np.float32)], transform_type="affine",
                  target_shape=(3, 4))[0]
    gdata, ggrid = invoke("_backward_BilinearSampler", [og, data, grid.astype(np.float64)])
    np.testing.assert_allclose(want[0], gdata, rtol=1e-5, atol=1e-5)
    gloc = invoke("_backward_GridGenerator", [ggrid.astype(np.float32)], transform_type="affine",
                  target_shape=(3, 4))
    np.testing.assert_allclose(want[1], gloc, rtol=1e-4, atol=1e-4)
    args = [a.astype(dtype) for a in (og, data, loc)]
    nn.check_reqs("_backward_SpatialTransformer", args, want, params, dtype)


def corr_reference(a, b, kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0,
                   is_multiply=True):
    """(output, tmp1, tmp2) of Correlation in float64, patch by patch."""
    pads = ((0, 0), (0, 0), (pad_size, pad_size), (pad_size, pad_size))
    pa, pb = (np.pad(x.astype(np.float64), pads) for x in (a, b))
    k, md = kernel_size, max_displacement
    border = md + (k - 1) // 2
    th = -(-(pa.shape[2] - 2 * border) // stride1)
    tw = -(-(pa.shape[3] - 2 * border) // stride1)
    r = md // stride2
    g = 2 * r + 1
    out = np.zeros((a.shape[0], g * g, th, tw))
    for tc in range(g * g):
        dy, dx = (tc // g - r) * stride2, (tc % g - r) * stride2
        for i in range(th):
            for j in range(tw):
                y, x = i * stride1 + md, j * stride1 + md
                u = pa[:, :, y:y + k, x:x + k]
                v = pb[:, :, y + dy:y + dy + k, x + dx:x + dx + k]
                out[:, tc, i, j] = (u * v if is_multiply else np.abs(u - v)).sum(axis=(1, 2, 3))
    return [out / (k * k * a.shape[1]), pa.transpose(0, 2, 3, 1), pb.transpose(0, 2, 3, 1)]


CORR = [((2, 3, 7, 8), dict(kernel_size=3, max_displacement=2, stride1=2, pad_size=2)),
        ((1, 2, 6, 7), dict(max_displacement=2, stride2=2, pad_size=1, is_multiply=False)),
        ((2, 4, 5, 5), dict(kernel_size=1, max_displacement=1)),
        ((2, 2, 6, 6), dict(kernel_size=5, max_displacement=1, stride1=3, pad_size=1)),
        ((3, 8, 20, 22), dict(kernel_size=3, max_displacement=2, pad_size=3))]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, params", CORR)
def test_correlation(nn, dtype, shape, params):
    rng = np.random.default_rng(shape[-1])
    a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    nn.check_reqs("Correlation", [a, b], corr_reference(a, b, **params), params, dtype)


@pytest.mark.parametrize("is_multiply", [True, False])
def test_correlation_gradient(is_multiply):
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 2, 4, 5)), rng.standard_normal((2, 2, 4, 5))
    check_numeric_gradient("Correlation", [a, b], eps=1e-6, rtol=1e-5, atol=1e-7,
                           kernel_size=3, max_displacement=1, pad_size=2, stride2=1,
                           is_multiply=is_multiply)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("is_multiply", [True, False])
def test_correlation_backward_reqs(nn, dtype, is_multiply):
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((2, 3, 5, 6))
    params = dict(kernel_size=3, max_displacement=2, stride1=2, pad_size=2,
                  is_multiply=is_multiply)
    outs = invoke("Correlation", [a, b], **params)
    og = rng.uniform(-1, 1, outs[0].shape)
    want = symbolic_gradient("Correlation", [a, b],
                             [og] + [np.zeros(o.shape) for o in outs[1:]], **params)
    args = [x.astype(dtype) for x in (og, a, b)]
    nn.check_reqs("_backward_Correlation", args, want, params, dtype)


def _mxnet_cases():
    with np.load(DATA) as f:
        ref = {k: f[k] for k in f.files}
    return ref, json.loads(str(ref["index"]))


@pytest.mark.parametrize("case", sorted(_mxnet_cases()[1]))
def test_mxnet_reference(case):
    ref, index = _mxnet_cases()
    spec = index[case]
    ins = [ref[f"{case}/in{i}"] for i in range(spec["inputs"])]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["params"].items()}
    tol = 1e-5 if ins[0].dtype == np.float32 else 1e-12
    out = invoke(spec["op"], ins, **params)[0]
    np.testing.assert_allclose(out, ref[f"{case}/out"], rtol=tol, atol=tol)
    reads = [] if spec["op"] == "GridGenerator" else ins     # its backward reads ograd only
    back = invoke(f"_backward_{spec['op']}", [ref[f"{case}/g"]] + reads, **params)
    back = back if isinstance(back, list) else [back]
    for i, g in enumerate(back):
        np.testing.assert_allclose(g, ref[f"{case}/grad{i}"], rtol=tol * 10, atol=tol * 10)


def _infer(op, params, ins):
    o = get(op)
    return infer_shapes(o, o.parse_params(params), ins)


def test_shapes_and_partial_inference():
    affine = dict(transform_type="affine", target_shape=(3, 4))
    assert _infer("GridGenerator", affine, [(0, 6)])[1] == [(0, 2, 3, 4), (3, 12)]
    assert _infer("GridGenerator", dict(transform_type="warp"), [(0, 2, 3, 4)])[1] == [
        (0, 2, 3, 4), (2, 3, 4)]
    assert get("BilinearSampler").infer_shape({}, [(2, 3, 5, 6), (2, 2, 4, 7)]) == [
        (2, 3, 4, 7), (2, 4, 7, 2)]
    assert get("GridGenerator").visible_output_count(affine) == 1
    assert get("BilinearSampler").visible_output_count({}) == 1
    st = get("SpatialTransformer")
    params = st.parse_params(dict(target_shape=(3, 4), **_ST))
    assert st.infer_shape(params, [(2, 3, 5, 6), (2, 6)]) == [(2, 3, 3, 4), (3, 12),
                                                               (2, 2, 3, 4)]
    assert st.visible_output_count(params) == 1
    corr = get("Correlation")       # MXNet: (2, 25, 3, 3)
    params = corr.parse_params(dict(kernel_size=3, max_displacement=2, stride1=2, pad_size=2))
    assert corr.infer_shape(params, [(2, 3, 7, 8)] * 2) == [(2, 25, 3, 3), (2, 11, 12, 3),
                                                            (2, 11, 12, 3)]
    assert corr.visible_output_count(params) == 1


@pytest.mark.parametrize("op, ins, params", [
    ("GridGenerator", [np.zeros((2, 6), np.float32)], dict(transform_type="affine")),
    ("GridGenerator", [np.zeros((2, 5), np.float32)],
     dict(transform_type="affine", target_shape=(2, 2))),
    ("GridGenerator", [np.zeros((2, 3, 4, 4), np.float32)], dict(transform_type="warp")),
    ("BilinearSampler", [np.zeros((2, 3, 4, 4)), np.zeros((2, 3, 4, 4))], {}),
    ("BilinearSampler", [np.zeros((2, 3, 4, 4)), np.zeros((1, 2, 4, 4))], {}),
    ("BilinearSampler", [np.zeros((3, 4, 4)), np.zeros((3, 2, 4, 4))], {}),
    ("SpatialTransformer", [np.zeros((2, 3, 4, 4)), np.zeros((2, 6))], _ST),
    ("SpatialTransformer", [np.zeros((2, 3, 4, 4)), np.zeros((2, 5))],
     dict(target_shape=(2, 2), **_ST)),
    ("SpatialTransformer", [np.zeros((2, 3, 4, 4)), np.zeros((1, 6))],
     dict(target_shape=(2, 2), **_ST)),
    ("Correlation", [np.zeros((1, 2, 3, 3)), np.zeros((1, 2, 3, 3))], {"max_displacement": 2}),
    ("Correlation", [np.zeros((1, 2, 3, 3)), np.zeros((1, 2, 3, 4))], {}),
    ("Correlation", [np.zeros((1, 2, 5, 5)), np.zeros((1, 2, 5, 5))], {"kernel_size": 2}),
    ("Correlation", [np.zeros((2, 3, 3)), np.zeros((2, 3, 3))], {}),
])
def test_shape_errors(op, ins, params):
    with pytest.raises(ShapeError):
        invoke(op, ins, **params)


def test_dtypes():
    with pytest.raises(TypeInferenceError):     # MXNet: "Other DTypes are not supported!"
        invoke("GridGenerator", [np.zeros((1, 6))], transform_type="affine", target_shape=(2, 2))
    with pytest.raises(TypeInferenceError):
        invoke("BilinearSampler", [np.zeros((1, 1, 2, 2), np.int32),
                                   np.zeros((1, 2, 2, 2), np.int32)])
    with pytest.raises(TypeInferenceError):
        invoke("BilinearSampler", [np.zeros((1, 1, 2, 2)), np.zeros((1, 2, 2, 2), np.float32)])
    with pytest.raises(TypeInferenceError):
        invoke("Correlation", [np.zeros((1, 1, 3, 3), np.int32)] * 2)
    out = invoke("BilinearSampler", [np.ones((1, 1, 2, 2)), np.zeros((1, 2, 2, 2))],
                 cudnn_off=True)
    assert out[0].dtype == np.float64
