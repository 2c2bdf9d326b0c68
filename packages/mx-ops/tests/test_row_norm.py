"""LayerNorm, GroupNorm and InstanceNorm (and their _backward_* operators)
against a NumPy reference in float64, MXNet 1.9.1's outputs and gradients
(tests/data/norm_mxnet191.npz), central finite differences, every req,
shape/type inference (partial too) and errors."""
from pathlib import Path

import numpy as np
import pytest

from mx_ops import get, infer_shapes, infer_types, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DATA = np.load(Path(__file__).parent / "data" / "norm_mxnet191.npz")
TOL = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-11}


def _cases(prefix):
    return sorted({k.rsplit(".", 1)[0] for k in DATA.files if k.startswith(prefix + ".")})


def _case(key):
    return {k.rsplit(".", 1)[1]: DATA[k] for k in DATA.files if k.rsplit(".", 1)[0] == key}


def _rows(x, op, **p):
    """x as rows (a list of 2-D (rows, n) float64 views) with the index of
    gamma for each element of a row, and the shape of the statistics."""
    x = x.astype(np.float64)
    if op == "LayerNorm":
        axis = p.get("axis", -1) % x.ndim
        xm = np.moveaxis(x, axis, -1)
        return xm.reshape(-1, x.shape[axis]), None, xm.shape[:-1], axis
    if op == "GroupNorm":
        g = p.get("num_groups", 1)
        return x.reshape(x.shape[0] * g, -1), g, (x.shape[0], g), None
    return x.reshape(x.shape[0] * x.shape[1], -1), x.shape[1], x.shape[:2], None


def norm_ref(op, x, gamma, beta, eps, **p):
    """(out, mean, std, var) in float64; mean/std in the operator's stat shape."""
    rows, per_row, sshape, axis = _rows(x, op, **p)
    mean = rows.mean(axis=1, keepdims=True)
    var = rows.var(axis=1, keepdims=True)
    xhat = (rows - mean) / np.sqrt(var + eps)
    g, b = gamma.astype(np.float64), beta.astype(np.float64)
    if per_row is None:
        y = xhat * g + b
    else:
        idx = np.arange(rows.shape[0]) % per_row
        y = xhat * g[idx, None] + b[idx, None]
    if op == "LayerNorm":
        moved = list(np.moveaxis(x, axis, -1).shape)
        y = np.moveaxis(y.reshape(moved), -1, axis)
        st = lambda v: np.expand_dims(v.reshape(sshape), axis)   # noqa: E731
    else:
        y = y.reshape(x.shape)
        st = lambda v: v.reshape(sshape)                          # noqa: E731
    return y, st(mean), st(np.sqrt(var + eps)), st(var)


def norm_grad_ref(op, x, gamma, dy, eps, **p):
    """(dx, dgamma, dbeta) in float64, from the formulas (not the kernel's)."""
    rows, per_row, _, axis = _rows(x, op, **p)
    drows = _rows(dy, op, **p)[0]
    mean = rows.mean(axis=1, keepdims=True)
    std = np.sqrt(rows.var(axis=1, keepdims=True) + eps)
    xhat = (rows - mean) / std
    gam = gamma.astype(np.float64)
    w = gam[None, :] if per_row is None else gam[np.arange(rows.shape[0]) % per_row, None]
    g = drows * w
    dxr = (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True)) \
        / std
    if per_row is None:
        dgamma, dbeta = (drows * xhat).sum(axis=0), drows.sum(axis=0)
        moved = list(np.moveaxis(x, axis, -1).shape)
        dx = np.moveaxis(dxr.reshape(moved), -1, axis)
    else:
        dgamma = (drows * xhat).sum(axis=1).reshape(-1, per_row).sum(axis=0)
        dbeta = drows.sum(axis=1).reshape(-1, per_row).sum(axis=0)
        dx = dxr.reshape(x.shape)
    return dx, dgamma, dbeta


EPS = {"LayerNorm": 1e-5, "GroupNorm": 1e-5, "InstanceNorm": 1e-3}
CASES = [  # op, shape, params
    ("LayerNorm", (4, 7), {}),
    ("LayerNorm", (3, 5, 6), {"axis": 1}),
    ("LayerNorm", (2, 3, 4), {"axis": -3}),
    ("LayerNorm", (9,), {}),
    ("LayerNorm", (300, 513), {}),
    ("LayerNorm", (40, 30, 20), {"axis": 1}),
    ("GroupNorm", (2, 6, 5), {"num_groups": 3}),
    ("GroupNorm", (3, 4, 2, 3), {"num_groups": 4}),
    ("GroupNorm", (16, 32, 24, 24), {"num_groups": 8}),
    ("InstanceNorm", (2, 3, 5), {}),
    ("InstanceNorm", (8, 16, 40, 40), {}),
]


def _vec_len(op, shape, p):
    if op == "LayerNorm":
        return shape[p.get("axis", -1)]
    return p["num_groups"] if op == "GroupNorm" else shape[1]


def _inputs(rng, op, shape, p, dtype, offset=1.0):
    k = _vec_len(op, shape, p)
    x = (rng.standard_normal(shape) * 2 + offset).astype(dtype)
    return x, rng.uniform(0.5, 1.5, k).astype(dtype), rng.standard_normal(k).astype(dtype)


def _dtypes(op):
    return ["float32"] if op == "InstanceNorm" else ["float16", "float32", "float64"]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_and_backward_against_numpy(case):
    op, shape, p = CASES[case]
    for dtype in _dtypes(op):
        rng = np.random.default_rng(case)
        x, gamma, beta = _inputs(rng, op, shape, p, dtype)
        y_ref, mean_ref, std_ref, var_ref = norm_ref(op, x, gamma, beta, EPS[op], **p)
        tol = TOL[dtype] * (10 if x.size > 100000 else 1)
        # invoke returns the hidden outputs too.
        y, mean, saved = invoke(op, [x, gamma, beta], **p)
        assert y.dtype == mean.dtype == np.dtype(dtype) and mean.shape == mean_ref.shape
        np.testing.assert_allclose(y.astype(np.float64), y_ref, rtol=tol, atol=tol * 4)
        np.testing.assert_allclose(mean.astype(np.float64), mean_ref, rtol=tol, atol=tol)
        # InstanceNorm's 'var' output holds the variance, the others' std.
        want = var_ref if op == "InstanceNorm" else std_ref
        np.testing.assert_allclose(saved.astype(np.float64), want, rtol=tol, atol=tol)
        saved = mean, saved
        dy = rng.standard_normal(shape).astype(dtype)
        got = invoke(f"_backward_{op}", [dy, x, gamma, *saved], **p)
        want = norm_grad_ref(op, x, gamma, dy, EPS[op], **p)
        for g, w in zip(got, want):
            assert g.dtype == np.dtype(dtype)
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol * 20,
                                       atol=tol * 20 * max(1.0, np.abs(w).max()))


@pytest.mark.parametrize("key", _cases("layer") + _cases("group") + _cases("instance"))
def test_against_mxnet(key):
    c = _case(key)
    parts = key.split(".")       # kind, shape[, axis or num_groups, dtype]
    op = {"layer": "LayerNorm", "group": "GroupNorm", "instance": "InstanceNorm"}[parts[0]]
    p = {}
    if parts[0] == "layer":
        p["axis"] = int(parts[2])
    elif parts[0] == "group":
        p["num_groups"] = int(parts[2])
    dtype = c["x"].dtype.name
    tol = 2e-5 if dtype == "float32" else 1e-10
    args = [c["x"], c["gamma"], c["beta"]]
    y, mean, sd = invoke(op, args, **p)
    np.testing.assert_allclose(y, c["out"], rtol=tol, atol=tol)
    if op != "InstanceNorm":        # MXNet shows InstanceNorm's output alone
        for got, want in ((mean, c["mean"]), (sd, c["std"])):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    saved = mean, sd
    grads = invoke(f"_backward_{op}", [c["og"], c["x"], c["gamma"], *saved], **p)
    for got, name in zip(grads, ("dx", "dgamma", "dbeta")):
        np.testing.assert_allclose(got, c[name], rtol=tol * 10, atol=tol * 10,
                                   err_msg=f"{key} {name}")


@pytest.mark.parametrize("op, shape, p", [
    ("LayerNorm", (3, 4), {}), ("LayerNorm", (2, 3, 4), {"axis": 1}),
    ("LayerNorm", (3, 2, 2), {"axis": 0}), ("GroupNorm", (2, 4, 3), {"num_groups": 2})])
def test_numeric_gradient(op, shape, p):
    x, gamma, beta = _inputs(np.random.default_rng(2), op, shape, p, "float64")
    check_numeric_gradient(op, [x, gamma, beta], rtol=1e-5, atol=1e-7, **p)
    # The statistics are outputs too: with output_mean_var they are visible
    # but pass no gradient (MXNet's convention), so only the output's counts.
    check_numeric_gradient(op, [x, gamma, beta], rtol=1e-5, atol=1e-7, check_inputs=[],
                           output_mean_var=True, **p)


def test_large_offset_keeps_the_variance():
    # Mean 1e4 with unit spread: sums of x^2 in float32 would lose it all.
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 256)) + 1e4).astype(np.float32)
    g, b = np.ones(256, np.float32), np.zeros(256, np.float32)
    y, mean, sd = invoke("LayerNorm", [x, g, b], output_mean_var=True)
    y_ref, _, std_ref, _ = norm_ref("LayerNorm", x, g, b, 1e-5)
    np.testing.assert_allclose(sd, std_ref, rtol=1e-5)
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("first", [0.0, 3.0, 1e2, 1e5])
def test_first_element_far_from_the_mean(first):
    # The one-pass sums are shifted by a row's first element; a spike there
    # takes the second (corrected two-pass) route.  Both keep float32 digits.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    x[:, 0] = first
    g, b = np.ones(512, np.float32), np.zeros(512, np.float32)
    y, mean, sd = invoke("LayerNorm", [x, g, b])
    y_ref, mean_ref, std_ref, _ = norm_ref("LayerNorm", x, g, b, 1e-5)
    np.testing.assert_allclose(sd, std_ref, rtol=2e-6)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, y_ref, rtol=0, atol=2e-5)


def test_constant_rows_and_eps():
    x = np.full((3, 5), 2.5, np.float32)
    g, b = np.ones(5, np.float32), np.arange(5, dtype=np.float32)
    y, mean, sd = invoke("LayerNorm", [x, g, b], eps=0.25, output_mean_var=True)
    np.testing.assert_array_equal(y, np.broadcast_to(b, (3, 5)))
    np.testing.assert_allclose(sd, 0.5)
    np.testing.assert_allclose(mean, 2.5)


@pytest.mark.parametrize("op, shape, p", [("LayerNorm", (5, 6), {}),
                                          ("GroupNorm", (2, 4, 3), {"num_groups": 2}),
                                          ("InstanceNorm", (2, 3, 4), {})])
def test_reqs(nn, op, shape, p):
    x, gamma, beta = _inputs(np.random.default_rng(4), op, shape, p, "float32")
    y, mean, sd, var = norm_ref(op, x, gamma, beta, EPS[op], **p)
    outs = [y, mean, var if op == "InstanceNorm" else sd]
    nn.check_reqs(op, [x, gamma, beta], outs, dict(p), "float32")
    dy = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    saved = [o.astype(np.float32) for o in outs[1:]]
    want = norm_grad_ref(op, x, gamma, dy, EPS[op], **p)
    nn.check_reqs(f"_backward_{op}", [dy, x, gamma, *saved], want, dict(p), "float32")


def test_forward_in_place():
    x, gamma, beta = _inputs(np.random.default_rng(6), "LayerNorm", (6, 8), {}, "float32")
    want = norm_ref("LayerNorm", x, gamma, beta, 1e-5)[0]
    stats = [np.empty((6, 1), np.float32), np.empty((6, 1), np.float32)]
    invoke("LayerNorm", [x, gamma, beta], out=[x, *stats], req=["inplace", "write", "write"])
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-5)


def _shapes(op, params, ins, outs=None):
    return infer_shapes(op, get(op).parse_params(params), ins, outs)


def _types(op, params, ins, outs=None):
    return infer_types(op, get(op).parse_params(params), ins, outs)


def test_shape_and_type_inference():
    assert _shapes("LayerNorm", {"axis": 1}, [(2, 6, 3), (6,), (6,)])[1] == \
        [(2, 6, 3), (2, 1, 3), (2, 1, 3)]
    assert _shapes("GroupNorm", {"num_groups": 3}, [(2, 6, 3, 2), (3,), (3,)])[1] == \
        [(2, 6, 3, 2), (2, 3), (2, 3)]
    assert _shapes("InstanceNorm", {}, [(2, 6, 3), (6,), (6,)])[1] == \
        [(2, 6, 3), (2, 6), (2, 6)]
    assert _types("LayerNorm", {}, ["float16"] * 3)[1] == ["float16"] * 3
    with pytest.raises(ShapeError, match="gamma"):
        _shapes("LayerNorm", {}, [(2, 6), (5,), (6,)])
    with pytest.raises(ShapeError, match="axis"):
        _shapes("LayerNorm", {"axis": -3}, [(2, 6), (6,), (6,)])
    with pytest.raises(ShapeError, match="divisible"):
        _shapes("GroupNorm", {"num_groups": 4}, [(2, 6, 3), (4,), (4,)])
    with pytest.raises(ShapeError, match="3 dimensions"):
        _shapes("GroupNorm", {"num_groups": 2}, [(2, 6), (2,), (2,)])
    with pytest.raises(ShapeError, match="3 dimensions"):
        _shapes("InstanceNorm", {}, [(2, 6), (6,), (6,)])
    with pytest.raises(TypeInferenceError, match="supported: float32"):
        _types("InstanceNorm", {}, ["float64"] * 3)
    with pytest.raises(TypeInferenceError):
        _types("LayerNorm", {}, ["float32", "float64", "float32"])
    with pytest.raises(TypeInferenceError, match="supported"):
        _types("LayerNorm", {}, ["int32"] * 3)


def test_partial_inference():
    # Unknown batch: gamma and beta still follow from the known axis.
    ins, outs = _shapes("LayerNorm", {}, [(0, 512), None, None])
    assert ins == [(0, 512), (512,), (512,)] and outs == [(0, 512), (0, 1), (0, 1)]
    ins, outs = _shapes("GroupNorm", {"num_groups": 2}, [(0, 4, 3), None, None])
    assert ins[1] == (2,) and outs[1] == (0, 2)
    ins, outs = _shapes("InstanceNorm", {}, [(0, 4, 3), None, None])
    assert ins[1] == (4,) and outs[2] == (0, 4)
    # The data's shape from the output's.
    ins, _ = _shapes("LayerNorm", {}, [None, None, None], [(3, 5), None, None])
    assert ins == [(3, 5), (5,), (5,)]
    ins, outs = _types("LayerNorm", {}, [None, "float64", None])
    assert ins == ["float64"] * 3 and outs == ["float64"] * 3


def test_parameter_defaults_and_visible_outputs():
    ln, gn, inn = get("LayerNorm"), get("GroupNorm"), get("InstanceNorm")
    assert ln.params["axis"].default == -1 and ln.params["eps"].default == 1e-5
    assert gn.params["num_groups"].default == 1 and inn.params["eps"].default == 1e-3
    assert ln.outputs == ("output", "mean", "std") and inn.outputs == ("output", "mean", "var")
    assert ln.visible_output_count(ln.parse_params({})) == 1
    assert ln.visible_output_count(ln.parse_params({"output_mean_var": True})) == 3
    assert inn.visible_output_count(inn.parse_params({})) == 1
