"""The operators added for gradients against NumPy, with every req:
reshape_like, broadcast_like, _collapse_sum_like, _broadcast_reduce_like,
_backward_Cast, _backward_Concat, _backward_slice, _backward_slice_axis,
_backward_take, _backward_gather_nd, _backward_gamma and _backward_gammaln
(digamma against SciPy), and their errors."""
import math

import numpy as np
import pytest
import scipy.special

from mx_ops import invoke, registry

RNG = np.random.default_rng(23)
FLOATS = ["float32", "float64", "float16"]


TOL = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-10}


def check_reqs(op, inputs, expected, kw, dtype):
    """``op`` under write, inplace (into another buffer), add (onto small
    integers, which every dtype holds) and null for each output, against ``expected`` (float64), in
    output dtype ``dtype``: floats within a tolerance, integers exactly."""
    tol = TOL.get(dtype, 0)
    got = invoke(op, inputs, **kw)
    got = got if isinstance(got, list) else [got]
    assert [g.dtype.name for g in got] == [dtype] * len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.astype(np.float64), e, rtol=tol, atol=tol)
    base = [RNG.integers(0, 4, np.shape(e)).astype(dtype) for e in expected]
    for req in ("inplace", "add", "null"):      # inplace into another buffer writes
        outs = [b.copy() for b in base]
        invoke(op, inputs, out=outs if len(outs) > 1 else outs[0], req=req, **kw)
        for o, b, e in zip(outs, base, expected):
            want = {"inplace": e, "add": b.astype(np.float64) + e,
                    "null": b.astype(np.float64)}[req]
            np.testing.assert_allclose(o.astype(np.float64), want, rtol=tol, atol=4 * tol)


def rand(shape, dtype="float64", lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def _reduced_like(like, axis, keepdims, exclude):
    """NumPy's view of the reduction's output shape (MXNet's rules)."""
    ndim = len(like)
    axes = range(ndim) if not axis else [a % ndim for a in axis]
    if exclude:
        axes = [d for d in range(ndim) if d not in axes]
    return np.sum(np.zeros(like), axis=tuple(axes), keepdims=keepdims).shape or (1,)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8"])
@pytest.mark.parametrize("lhs, rhs, kw, want", [
    ((6,), (3, 2), {}, (3, 2)),
    ((30, 7), (15, 2, 4), {"lhs_begin": 0, "lhs_end": 1, "rhs_begin": 0, "rhs_end": 2},
     (15, 2, 7)),
    ((3, 5), (1, 15, 4), {"lhs_begin": 0, "lhs_end": 2, "rhs_begin": 1, "rhs_end": 2}, (15,)),
    ((30, 12), (4, 2, 2, 3), {"lhs_begin": -1, "rhs_begin": 1}, (30, 2, 2, 3)),
    ((), (1,), {}, (1,)),
])
def test_reshape_like(lhs, rhs, kw, want, dtype):
    x = (RNG.integers(0, 9, lhs)).astype(dtype)
    y = np.zeros(rhs, "float32")
    check_reqs("reshape_like", [x, y], [x.reshape(want).astype(np.float64)], kw, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int8"])
@pytest.mark.parametrize("lhs, rhs, kw, want", [
    ((2, 1, 3), (2, 4, 3), {}, (2, 4, 3)),
    ((1, 1), (3, 5), {}, (3, 5)),
    ((2, 1, 1), (7, 4, 5), {"lhs_axes": (1, -1), "rhs_axes": (0, 2)}, (2, 7, 5)),
])
def test_broadcast_like(lhs, rhs, kw, want, dtype):
    x = RNG.integers(-4, 5, lhs).astype(dtype)
    expect = np.broadcast_to(x, want).astype(np.float64)
    check_reqs("broadcast_like", [x, np.zeros(rhs, "float16")], [expect], kw, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("data, like", [
    ((2, 3, 4), (3, 1)), ((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (1, 1, 1)), ((5, 4), ()),
    ((2, 1, 4), (1, 4)), ((3, 4), (4,)), ((), ()),
])
def test_collapse_sum_like(data, like, dtype):
    x = RNG.integers(-4, 5, data).astype(dtype)
    lead = len(data) - len(like)
    axes = tuple(d for d in range(len(data))
                 if d < lead or (like[d - lead] == 1 and data[d] != 1))
    want = x.astype(np.float64).sum(axis=axes, keepdims=True).reshape(like)
    check_reqs("_collapse_sum_like", [x, np.zeros(like, "float32")], [want], {}, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("like, kw", [
    ((2, 3, 4), {"axis": (1,)}),
    ((2, 3, 4), {"axis": (0, -1), "keepdims": True}),
    ((2, 3, 4), {"axis": (1,), "exclude": True}),
    ((2, 3, 4), {"axis": (1,), "exclude": True, "keepdims": True, "normalize": True}),
    ((2, 3, 4), {}),
    ((2, 3, 4), {"axis": (), "keepdims": True, "normalize": True}),
    ((5,), {"axis": (0,), "normalize": True}),
    ((), {}),
])
def test_broadcast_reduce_like(like, kw, dtype):
    axis, keep, excl = kw.get("axis"), kw.get("keepdims", False), kw.get("exclude", False)
    small = _reduced_like(like, axis, keep, excl)
    x = rand(small, dtype)
    ndim = len(like)
    axes = list(range(ndim)) if not axis else [a % ndim for a in axis]
    if excl:
        axes = [d for d in range(ndim) if d not in axes]
    kept = np.expand_dims(x.astype(np.float64).reshape([like[d] for d in range(ndim)
                                                        if d not in axes] or ()),
                          tuple(axes)) if ndim else x.astype(np.float64).reshape(())
    want = np.broadcast_to(kept, like)
    if kw.get("normalize"):
        want = want / max(1, math.prod(like[d] for d in axes))
    check_reqs("_broadcast_reduce_like", [x, np.zeros(like, dtype)], [want], kw, dtype)


def test_broadcast_reduce_like_integers_truncate_the_scale():
    x = np.array([7, -7], np.int32)
    got = invoke("_broadcast_reduce_like", [x, np.zeros((2, 2))], axis=(1,), normalize=True)
    np.testing.assert_array_equal(got, [[3, 3], [-3, -3]])


@pytest.mark.parametrize("src, dst", [("float32", "float64"), ("float64", "float16"),
                                      ("float16", "float32"), ("float32", "int32")])
def test_backward_cast(src, dst):
    g = rand((3, 4), src, -3, 3)
    want = g.astype(dst).astype(np.float64)
    check_reqs("_backward_Cast", [g, np.zeros((3, 4), dst)], [want], {}, dst)
    # the shapes may differ (a norm's result cast to its input's dtype)
    assert invoke("_backward_cast", [g, np.zeros((1,), dst)]).shape == (3, 4)


@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
@pytest.mark.parametrize("shapes, dim", [
    ([(2, 3, 4), (2, 1, 4), (2, 5, 4)], 1), ([(2, 3), (4, 3)], 0), ([(3, 2), (3, 0), (3, 5)], -1),
    ([(7,)], 0),
])
def test_backward_concat(shapes, dim, dtype):
    parts = [RNG.integers(-4, 5, s).astype(dtype) for s in shapes]
    g = np.concatenate(parts, axis=dim)
    likes = [np.zeros(s, dtype) for s in shapes]
    check_reqs("_backward_Concat", [g] + likes, [p.astype(np.float64) for p in parts],
                  {"dim": dim}, dtype)


def _slice_grad(shape, region, g):
    out = np.zeros(shape)
    out[region] = g
    return out


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("shape, kw, region", [
    ((5, 6, 7), {"begin": (1, None, -1), "end": (4, None, 0), "step": (2, 1, -2)},
     np.s_[1:4:2, :, -1:0:-2]),
    ((5, 6), {"begin": (2,), "end": (2,)}, np.s_[2:2]),
    ((4, 5), {"begin": (-3, 1), "end": (None, 4)}, np.s_[-3:, 1:4]),
])
def test_backward_slice(shape, kw, region, dtype):
    g = RNG.integers(-4, 5, np.zeros(shape)[region].shape).astype(dtype)
    check_reqs("_backward_slice", [g, np.zeros(shape, dtype)],
                  [_slice_grad(shape, region, g.astype(np.float64))], kw, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, kw, region", [
    ((4, 5, 6), {"axis": 1, "begin": -3, "end": None}, np.s_[:, -3:]),
    ((4, 5), {"axis": -1, "begin": 0, "end": 2}, np.s_[:, 0:2]),
    ((4, 5), {"axis": 0, "begin": 1, "end": -1}, np.s_[1:-1]),
])
def test_backward_slice_axis(shape, kw, region, dtype):
    g = rand(np.zeros(shape)[region].shape, dtype)
    check_reqs("_backward_slice_axis", [g, np.zeros(shape, dtype)],
                  [_slice_grad(shape, region, g.astype(np.float64))], kw, dtype)


def _take_grad(a_shape, idx, g, axis, mode):
    n = a_shape[axis]
    j = np.trunc(np.asarray(idx, np.float64)).astype(np.int64).reshape(-1)
    rows = np.mod(j, n) if mode == "wrap" else np.clip(j, 0, n - 1)
    out = np.zeros(a_shape)
    gm = np.moveaxis(g.reshape(a_shape[:axis] + (j.size,) + a_shape[axis + 1:]), axis, 0)
    om = np.moveaxis(out, axis, 0)
    np.add.at(om, rows, gm)
    return out


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("a_shape, idx, kw", [
    ((3, 4), np.array([[0, 2], [2, -1], [5, 2]], np.int32), {}),
    ((4, 3, 2), np.array([1, 4, -1, 1, -5, 9]), {"axis": 1, "mode": "wrap"}),
    ((2, 4, 3), np.array([[2.7, -0.5], [1.2, 2.0]], np.float32), {"axis": -1, "mode": "raise"}),
    ((5, 3), np.array(3, np.int8), {"axis": 0, "mode": "wrap"}),
])
def test_backward_take(a_shape, idx, kw, dtype):
    axis = kw.get("axis", 0) % len(a_shape)
    g_shape = a_shape[:axis] + idx.shape + a_shape[axis + 1:]
    g = RNG.integers(-4, 5, g_shape).astype(dtype)
    want = _take_grad(a_shape, idx, g.astype(np.float64), axis, kw.get("mode", "clip"))
    check_reqs("_backward_take", [g, idx, np.zeros(a_shape, dtype)], [want], kw, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
def test_backward_gather_nd(dtype):
    data_shape = (4, 3, 2)
    idx = np.array([[0, 3, -1, 0], [2, 0, 1, 2]])      # (0, 2) twice, a negative index
    g = RNG.integers(-4, 5, (4, 2)).astype(dtype)
    want = np.zeros(data_shape)
    np.add.at(want, (idx[0] % 4, idx[1] % 3), g.astype(np.float64))
    check_reqs("_backward_gather_nd", [g, idx, np.zeros(data_shape, dtype)], [want], {}, dtype)


def test_digamma_is_accurate_in_float64():
    x = np.concatenate([np.linspace(1e-3, 30, 4001), [1e-8, 0.5, 1.0, 1.4616321449683622,
                                                      2.0, 9.99, 10.0, 1e3, 1e8],
                        -np.linspace(0.01, 20.5, 997)])
    x = x[np.abs(x - np.round(x)) > 1e-3 * (x < 0)]     # away from the poles at -n
    got = invoke("_backward_gammaln", [np.ones_like(x), x])
    want = scipy.special.digamma(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.isnan(invoke("_backward_gammaln", [np.ones(3), np.array([0.0, -1.0, -7.0])])).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_backward_gamma_ops(dtype):
    x = rand((3, 5), "float64", 0.2, 4.0).astype(dtype)
    g = rand((3, 5), dtype)
    xf, gf = x.astype(np.float64), g.astype(np.float64)
    psi = scipy.special.digamma(xf)
    check_reqs("_backward_gammaln", [g, x], [gf * psi], {}, dtype)
    check_reqs("_backward_gamma", [g, x], [gf * scipy.special.gamma(xf) * psi], {}, dtype)


@pytest.mark.parametrize("op, inputs, kw, text", [
    ("reshape_like", [np.zeros((2, 3)), np.zeros((4, 2))], {},
     "reshape_like: cannot reshape 'lhs' of shape (2, 3) to (4, 2)"),
    ("reshape_like", [np.zeros((2, 3)), np.zeros((4, 2))], {"lhs_begin": 2, "lhs_end": 1},
     "reshape_like: arguments 'lhs_begin' (2) and 'lhs_end' (1)"),
    ("broadcast_like", [np.zeros((2, 3)), np.zeros((2, 4))], {},
     "broadcast_like: 'lhs' of shape (2, 3) does not broadcast to 'rhs' (2, 4)"),
    ("broadcast_like", [np.zeros((2, 3)), np.zeros((5,))], {"lhs_axes": (0,), "rhs_axes": (0,)},
     "broadcast_like: axis 0 of 'lhs' (2, 3) has size 2"),
    ("_collapse_sum_like", [np.zeros((2, 3)), np.zeros((2,))], {},
     "_collapse_sum_like: argument 'like' of shape (2,) does not broadcast to 'data' (2, 3)"),
    ("_broadcast_reduce_like", [np.zeros((3,)), np.zeros((2, 3))], {"axis": (1,)},
     "_broadcast_reduce_like: argument 'data' has shape (3,); reducing 'like' (2, 3)"),
    ("_backward_Concat", [np.zeros((2, 5)), np.zeros((2, 3)), np.zeros((2, 3))], {"dim": 1},
     "_backward_Concat: argument 'arg0' (the output gradient) has shape (2, 5)"),
    ("_backward_slice", [np.zeros((2,)), np.zeros((4, 5))], {"begin": (1,), "end": (3,)},
     "_backward_slice: argument 'ograd' has shape (2,), but the region of 'data' (4, 5)"),
    ("_backward_take", [np.zeros((3,)), np.zeros((2,)), np.zeros((4, 5))], {},
     "_backward_take: argument 'ograd' has shape (3,); take of 'a' (4, 5)"),
    ("_backward_gather_nd", [np.zeros((3,)), np.zeros((2, 2)), np.zeros((4, 5))], {},
     "_backward_gather_nd: argument 'ograd' has shape (3,)"),
    ("_backward_gammaln", [np.zeros((3,)), np.zeros((2,))], {},
     "_backward_gammaln: argument 'data' has shape (2,), which differs from 'ograd' (3,)"),
])
def test_errors_name_the_op_and_argument(op, inputs, kw, text):
    with pytest.raises(registry.ShapeError) as info:
        invoke(op, inputs, **kw)
    assert text in str(info.value)


def test_backward_gamma_refuses_integers():
    with pytest.raises(registry.TypeInferenceError, match="_backward_gamma: arguments 'ograd'"):
        invoke("_backward_gamma", [np.zeros(3, np.int32), np.zeros(3, np.int32)])


def test_in_place_calls():
    x = rand((2, 6))
    out = x.reshape(3, 4)           # reshape_like in place: the output is the input's memory
    invoke("reshape_like", [x, np.zeros((3, 4))], out=out, req="inplace")
    np.testing.assert_array_equal(out, x.reshape(3, 4))
    g, x = rand((3, 4)), rand((3, 4), lo=0.5, hi=3.0)
    want = g * scipy.special.digamma(x)
    invoke("_backward_gammaln", [g, x], out=g, req="inplace")
    np.testing.assert_allclose(g, want, rtol=1e-12)
