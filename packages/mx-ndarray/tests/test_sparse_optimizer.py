"""The optimizer updates with row_sparse gradients (sgd_update,
sgd_mom_update, adam_update, ftrl_update, _sparse_adagrad_update): against
MXNet 1.9.1's recorded results (data/sparse/mxnet_sparse_optim.npz, made by
make_mxnet_sparse_optim.py), against a NumPy reference with Hypothesis
(random row subsets, empty gradients, lazy and standard updates, dense and
row_sparse weights), in place and out of place, and the errors on bad
input."""
import json
import logging
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
from mx_engine.base import MXNetError
from mx_ndarray import sparse
from mx_ndarray._invoke import invoke
from mx_ops.core.registry import ShapeError

DATA = pathlib.Path(__file__).parent / "data" / "sparse"
REF = np.load(DATA / "mxnet_sparse_optim.npz")
CASES = {c["name"]: c for c in json.loads(str(REF["cases"]))}
OP_NAMES = {"adagrad_update": "_sparse_adagrad_update"}
NSTATES = {"sgd_update": 0, "sgd_mom_update": 1, "adam_update": 2, "ftrl_update": 2,
           "adagrad_update": 1}
OWN = {"sgd_update": {}, "sgd_mom_update": {"momentum": 0.9},
       "adam_update": {"beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6},
       "ftrl_update": {"lamda1": 0.01, "beta": 1.0}, "adagrad_update": {"epsilon": 1e-5}}


def rsp(data, indices, shape, dtype="float32"):
    return sparse.row_sparse_array((np.asarray(data, dtype), np.asarray(indices, np.int64)),
                                   shape=shape, dtype=dtype)


def update(op, weight, grad, states, **kwargs):
    return invoke(OP_NAMES.get(op, op), [weight, grad] + list(states), **kwargs)


# --- MXNet 1.9.1 ---------------------------------------------------------------------------
def reference(case):
    """(gradient rows, weight, MXNet's weight, [(state, MXNet's state)...])."""
    shape, nrows = tuple(case["shape"]), len(case["grad_indices"])
    flat, at = REF[case["dtype"]], case["offset"]
    sizes = [nrows * int(np.prod(shape[1:]))] + [int(np.prod(shape))] * (
        2 + 2 * NSTATES[case["op"]])
    parts = []
    for n in sizes:
        parts.append(flat[at:at + n])
        at += n
    grad = parts[0].reshape((nrows,) + shape[1:])
    tables = [x.reshape(shape) for x in parts[1:]]
    return grad, tables[0], tables[1], list(zip(tables[2::2], tables[3::2]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    case = CASES[name]
    op, stype, dtype = case["op"], case["stype"], case["dtype"]
    shape = tuple(case["shape"])
    gdata, weight, want_w, states = reference(case)
    w = nd.array(weight, dtype=dtype).tostype(stype)
    g = rsp(gdata, case["grad_indices"], shape, dtype)
    s = [nd.array(before, dtype=dtype).tostype(stype) for before, _ in states]
    update(op, w, g, s, out=w, **case["params"])
    assert w.stype == case["out_stype"]
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.asnumpy(), want_w, **tol)
    for got, (_, want) in zip(s, states):
        assert got.stype == stype
        np.testing.assert_allclose(got.asnumpy(), want, **tol)


# --- a NumPy reference ---------------------------------------------------------------------
def _clip(v, c):
    return np.clip(v, -c, c) if c >= 0 else v


def numpy_step(op, p, w, g, s):
    """One dense step on rows ``w`` with gradient rows ``g`` (float64);
    ``s``: the state rows, updated in place.  Returns the new rows."""
    lr, wd, rs, c = p["lr"], p["wd"], p["rescale_grad"], p["clip_gradient"]
    if op == "sgd_update":
        return (1 - lr * wd) * w - lr * _clip(rs * g, c)
    if op == "sgd_mom_update":
        s[0][...] = p["momentum"] * s[0] - lr * wd * w - lr * _clip(rs * g, c)
        return w + s[0]
    if op == "adam_update":
        gr = _clip(rs * g + wd * w, c)
        s[0][...] = p["beta1"] * s[0] + (1 - p["beta1"]) * gr
        s[1][...] = p["beta2"] * s[1] + (1 - p["beta2"]) * gr * gr
        return w - lr * s[0] / (np.sqrt(s[1]) + p["epsilon"])
    gr = _clip(rs * g, c)
    if op == "adagrad_update":
        s[0][...] += gr * gr
        return w - gr / np.sqrt(s[0] + p["epsilon"]) * lr
    z, n = s
    z[...] += gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr
    n[...] += gr * gr
    return (np.sign(z) * p["lamda1"] - z) / ((p["beta"] + np.sqrt(n)) / lr + wd) \
        * (np.abs(z) > p["lamda1"])


def numpy_update(op, p, weight, gdata, gidx, states, lazy):
    """The whole update in float64 with MXNet's float32 parameters: the
    gradient's rows (lazy), or every row with zeros where the gradient has
    none (SGD: MXNet's two passes, every row scaled by 1 - lr*wd computed
    in float32, then the step without weight decay)."""
    p = {k: v if isinstance(v, bool) else float(np.float32(v)) for k, v in p.items()}
    w = weight.astype(np.float64)
    if op == "sgd_update" and not lazy:
        w = (w * float(np.float32(1) - np.float32(p["lr"]) * np.float32(p["wd"])))
        w = w.astype(weight.dtype).astype(np.float64)
        p = dict(p, wd=0.0)
    s = [x.astype(np.float64) for x in states]
    if lazy:
        rows = np.asarray(gidx, np.int64)
        g = gdata.astype(np.float64)
    else:
        rows = np.arange(w.shape[0])
        g = np.zeros_like(w)
        g[np.asarray(gidx, np.int64)] = gdata
    srows = [x[rows] for x in s]
    w[rows] = numpy_step(op, p, w[rows], g, srows)
    for x, r in zip(s, srows):
        x[rows] = r
    return w, s


def _initial(rng, op, shape, dtype):
    w = rng.uniform(-2, 2, shape).astype(dtype)
    states = [rng.uniform(0.1, 1, shape).astype(dtype) for _ in range(NSTATES[op])]
    if op == "ftrl_update":
        states[0] = rng.uniform(-1, 1, shape).astype(dtype)
    return w, states


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(NSTATES)), stype=st.sampled_from(["default", "row_sparse"]),
       lazy=st.booleans(), clip=st.sampled_from([-1.0, 0.5]),
       rows=st.integers(1, 12), width=st.integers(1, 4), data=st.data(),
       dtype=st.sampled_from(["float32", "float64"]))
def test_against_numpy(op, stype, lazy, clip, rows, width, data, dtype):
    if op == "ftrl_update":
        stype = "row_sparse"         # ftrl's sparse kernel needs everything row_sparse
    gidx = sorted(data.draw(st.sets(st.integers(0, rows - 1)), label="rows"))
    rng = np.random.RandomState(len(gidx) * 31 + rows)
    shape = (rows, width)
    weight, states = _initial(rng, op, shape, dtype)
    gdata = rng.uniform(-3, 3, (len(gidx), width)).astype(dtype)
    p = dict(lr=0.1, wd=0.0 if op == "adagrad_update" else 0.05, rescale_grad=0.7,
             clip_gradient=clip, **OWN[op])
    if op in ("sgd_update", "sgd_mom_update", "adam_update"):
        p["lazy_update"] = lazy
    else:
        lazy = True                  # FTRL and AdaGrad update the gradient's rows only
    w = nd.array(weight, dtype=dtype).tostype(stype)
    s = [nd.array(x, dtype=dtype).tostype(stype) for x in states]
    update(op, w, rsp(gdata, gidx, shape, dtype), s, out=w, **p)
    want_w, want_s = numpy_update(op, p, weight, gdata, gidx, states, lazy)
    tol = 2e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=tol, atol=tol)
    for got, want in zip(s, want_s):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=tol, atol=tol)
    if lazy:       # untouched rows keep their bits
        keep = np.setdiff1d(np.arange(rows), gidx)
        np.testing.assert_array_equal(w.asnumpy()[keep], weight[keep])


@pytest.mark.parametrize("op", ["sgd_update", "sgd_mom_update", "adam_update"])
def test_standard_update_is_the_dense_update(op):
    """lazy_update=False with a row_sparse gradient gives what the dense
    operator gives on the densified gradient."""
    rng = np.random.RandomState(5)
    shape = (9, 4)
    weight, states = _initial(rng, op, shape, "float32")
    gdata = rng.uniform(-1, 1, (3, 4)).astype("float32")
    g = rsp(gdata, [0, 4, 8], shape)
    p = dict(lr=0.1, wd=0.02, clip_gradient=0.4, lazy_update=False, **OWN[op])
    w1, s1 = nd.array(weight), [nd.array(x) for x in states]
    w2, s2 = nd.array(weight), [nd.array(x) for x in states]
    update(op, w1, g, s1, out=w1, **p)
    update(op, w2, g.tostype("default"), s2, out=w2, **p)
    np.testing.assert_allclose(w1.asnumpy(), w2.asnumpy(), rtol=1e-6, atol=1e-7)
    for a, b in zip(s1, s2):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", sorted(NSTATES))
def test_empty_gradient(op):
    rng = np.random.RandomState(2)
    weight, states = _initial(rng, op, (5, 3), "float32")
    stype = "row_sparse" if op == "ftrl_update" else "default"
    w = nd.array(weight).tostype(stype)
    s = [nd.array(x).tostype(stype) for x in states]
    p = dict(lr=0.1, **OWN[op])
    update(op, w, sparse.zeros("row_sparse", (5, 3)), s, out=w, **p)
    np.testing.assert_array_equal(w.asnumpy(), weight)
    for a, b in zip(s, states):
        np.testing.assert_array_equal(a.asnumpy(), b)


def test_large_table_split_across_threads():
    """A table big enough for the threaded loops, both modes."""
    rng = np.random.RandomState(3)
    shape = (20000, 16)
    weight, (mom,) = _initial(rng, "sgd_mom_update", shape, "float32")
    gidx = np.sort(rng.choice(shape[0], 5000, replace=False))
    gdata = rng.uniform(-1, 1, (5000, 16)).astype("float32")
    p = dict(lr=0.1, wd=0.01, rescale_grad=1.0, clip_gradient=-1.0, momentum=0.9)
    for lazy in (True, False):
        w, m = nd.array(weight), nd.array(mom)
        update("sgd_mom_update", w, rsp(gdata, gidx, shape), [m], out=w, lazy_update=lazy, **p)
        want_w, (want_m,) = numpy_update("sgd_mom_update", p, weight, gdata, gidx, [mom], lazy)
        np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.asnumpy(), want_m, rtol=1e-5, atol=1e-6)


def test_float16_computes_in_float():
    rng = np.random.RandomState(4)
    weight, _ = _initial(rng, "sgd_update", (6, 3), "float16")
    gdata = rng.uniform(-1, 1, (2, 3)).astype("float16")
    w = nd.array(weight, dtype="float16")
    update("sgd_update", w, rsp(gdata, [1, 5], (6, 3), "float16"), [], out=w, lr=0.5)
    want = weight.astype(np.float32)
    want[[1, 5]] -= 0.5 * gdata.astype(np.float32)
    np.testing.assert_array_equal(w.asnumpy(), want.astype(np.float16))


# --- in place, out of place ------------------------------------------------------------
@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_out_of_place_leaves_the_weight(stype):
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)
    w = nd.array(weight).tostype(stype)
    mom = nd.zeros((4, 3)).tostype(stype)
    out = update("sgd_mom_update", w, rsp(np.ones((1, 3)), [2], (4, 3)), [mom], lr=0.5,
                 momentum=0.9)
    assert out.stype == stype
    want = weight.copy()
    want[2] -= 0.5
    np.testing.assert_array_equal(out.asnumpy(), want)
    np.testing.assert_array_equal(w.asnumpy(), weight)
    np.testing.assert_array_equal(mom.asnumpy()[2], [-0.5] * 3)      # states: in place


def test_row_sparse_weight_keeps_its_rows():
    w = nd.array(np.ones((4, 2), np.float32)).tostype("row_sparse")
    update("sgd_update", w, rsp([[1, 1]], [3], (4, 2)), [], out=w, lr=0.25)
    assert w.stype == "row_sparse"
    np.testing.assert_array_equal(w.indices.asnumpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(w.asnumpy()[3], [0.75, 0.75])


def test_lazy_update_with_weight_decay_logs_once(caplog, monkeypatch):
    """MXNet's LogLazyUpdate: once per process, when wd != 0."""
    from mx_ops.ops.optimizer import sparse_update
    monkeypatch.setattr(sparse_update, "_warned", [])
    w = nd.ones((3, 2))
    g = rsp([[1, 1]], [0], (3, 2))
    with caplog.at_level(logging.WARNING, logger="mx.optimizer"):
        update("sgd_update", w, g, [], out=w, lr=0.1)                     # no wd: quiet
        assert not caplog.records
        for _ in range(2):
            update("sgd_update", w, g, [], out=w, lr=0.1, wd=0.1)
        w.wait_to_read()
    assert sum("lazy_update = True" in r.getMessage() for r in caplog.records) == 1


# --- bad input -------------------------------------------------------------------------
def test_grad_shape_mismatch():
    with pytest.raises(ShapeError, match="sgd_update: argument 'grad' has shape"):
        update("sgd_update", nd.ones((4, 3)), rsp(np.ones((1, 2)), [0], (4, 2)), [], lr=0.1)


@pytest.mark.parametrize("indices, why", [([2, 0], "not sorted ascending and unique at "
                                                   r"position 1 \(2 then 0\)"),
                                          ([1, 1], "not sorted ascending and unique"),
                                          ([0, 4], "index 4 at position 1, outside")])
def test_bad_gradient_indices(indices, why):
    w = nd.ones((4, 3))
    update("sgd_update", w, rsp(np.ones((2, 3)), indices, (4, 3)), [], out=w, lr=0.1)
    with pytest.raises((MXNetError, ValueError), match=f"sgd_update: argument 'grad'.*{why}"):
        w.asnumpy()


def test_row_sparse_weight_must_store_every_row():
    w = rsp(np.ones((2, 3)), [0, 2], (4, 3))
    update("sgd_update", w, rsp(np.ones((1, 3)), [2], (4, 3)), [], out=w, lr=0.1)
    with pytest.raises((MXNetError, ValueError), match="must store every row.*stores 2 of 4"):
        w.asnumpy()


def test_adagrad_refusals():
    w, h = nd.ones((3, 2)), nd.zeros((3, 2))
    g = rsp([[1, 1]], [1], (3, 2))
    with pytest.raises(ValueError, match="wd must be 0"):
        update("adagrad_update", w, g, [h], out=w, lr=0.1, wd=0.1)
    with pytest.raises(ValueError, match="needs a row_sparse 'grad'"):
        update("adagrad_update", w, nd.ones((3, 2)), [h], out=w, lr=0.1)
    with pytest.raises(ValueError, match="needs a row_sparse 'grad'.*history row_sparse"):
        update("adagrad_update", w, g, [h.tostype("row_sparse")], out=w, lr=0.1)


def test_dtype_mismatch():
    with pytest.raises(MXNetError, match="sgd_update: argument 'grad' has dtype float64"):
        update("sgd_update", nd.ones((3, 2)), rsp([[1, 1]], [1], (3, 2), "float64"), [],
               lr=0.1)


def test_mixed_storage_falls_back_to_dense():
    """A row_sparse weight with dense momentum has no sparse kernel in
    MXNet: the dense update on densified inputs, cast back."""
    w = nd.ones((3, 2)).tostype("row_sparse")
    mom = nd.zeros((3, 2))
    update("sgd_mom_update", w, rsp([[1, 1]], [1], (3, 2)), [mom], out=w, lr=0.5,
           momentum=0.9)
    assert w.stype == "row_sparse"
    np.testing.assert_allclose(w.asnumpy(), [[1, 1], [0.5, 0.5], [1, 1]])
    np.testing.assert_allclose(mom.asnumpy(), [[0, 0], [-0.5, -0.5], [0, 0]])


# --- the CuPy twin -----------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("op", sorted(NSTATES))
@pytest.mark.parametrize("stype", ["default", "row_sparse"])
@pytest.mark.parametrize("lazy", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_gpu_matches_the_cpu(op, stype, lazy, dtype):
    from mx_engine import cpu, gpu
    if op == "ftrl_update":
        stype = "row_sparse"
    rng = np.random.RandomState(7)
    shape = (300, 5)
    weight, states = _initial(rng, op, shape, dtype)
    gidx = np.sort(rng.choice(shape[0], 40, replace=False))
    gdata = rng.uniform(-1, 1, (40, 5)).astype(dtype)
    p = dict(lr=0.1, wd=0.0 if op == "adagrad_update" else 0.03, clip_gradient=0.6, **OWN[op])
    if op in ("sgd_update", "sgd_mom_update", "adam_update"):
        p["lazy_update"] = lazy
    got = []
    for ctx in (cpu(0), gpu(0)):
        w = nd.array(weight, ctx=ctx, dtype=dtype).tostype(stype)
        s = [nd.array(x, ctx=ctx, dtype=dtype).tostype(stype) for x in states]
        g = sparse.row_sparse_array((gdata, gidx), shape=shape, ctx=ctx, dtype=dtype)
        update(op, w, g, s, out=w, **p)
        assert w.stype == stype and w.context == ctx
        got.append([w.asnumpy()] + [x.asnumpy() for x in s])
    tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}[dtype]
    for a, b in zip(*got):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


@pytest.mark.gpu
def test_gpu_bad_indices():
    from mx_engine import gpu
    w = nd.ones((4, 3), ctx=gpu(0))
    g = sparse.row_sparse_array((np.ones((2, 3), np.float32), np.array([3, 1])), shape=(4, 3),
                                ctx=gpu(0))
    update("sgd_update", w, g, [], out=w, lr=0.1)
    with pytest.raises((MXNetError, ValueError), match="not sorted ascending"):
        w.asnumpy()


def test_partly_stored_state_is_refused():
    """MXNet reads past a row_sparse state storing some rows (and corrupts
    its heap); here it is an error naming the state."""
    w = nd.ones((4, 3)).tostype("row_sparse")
    mom = rsp(np.ones((2, 3)), [0, 2], (4, 3))
    update("sgd_mom_update", w, rsp(np.ones((1, 3)), [2], (4, 3)), [mom], out=w, lr=0.1)
    with pytest.raises((MXNetError, ValueError), match="row_sparse 'mom' must store every row"):
        w.asnumpy()
