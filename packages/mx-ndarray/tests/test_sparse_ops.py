"""The sparse operators beyond cast_storage: every storage combination of
data/sparse/sparse_ops_cases.py against MXNet 1.9.1's recorded output,
storage type and fallback (make_sparse_ops_reference.py), then each kernel
against NumPy/SciPy with Hypothesis over shapes (empty rows, no stored
values, zero-size), densities and dtypes, and the errors."""
import json
import logging
import pathlib
import sys

import numpy as np
import pytest
import scipy.sparse as spsp
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
from mx_engine.base import MXNetError
from mx_ndarray import _sparse_base, sparse

DATA = pathlib.Path(__file__).parent / "data" / "sparse"
sys.path.insert(0, str(DATA))
from sparse_ops_cases import arrays, cases  # noqa: E402

REF = np.load(DATA / "sparse_ops_mxnet191.npz")
META = json.loads((DATA / "sparse_ops_mxnet191.json").read_text())
SRC = arrays()
# MXNet 1.9.1 cannot densify a csr of 0 rows (its cast_storage shape check fails).
MXNET_EMPTY_CSR_BUG = "Operator cast_storage inferring shapes failed"
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8"]


def _as(x, stype, dtype=None):
    a = nd.array(x, dtype=dtype or x.dtype)
    return a if stype == "default" else a.tostype(stype)


def _call(op, args, **params):
    fn = getattr(nd, op, None)
    return fn(*args, **params) if fn is not None else nd.invoke(op, list(args), **params)


# --- against MXNet 1.9.1, case by case -----------------------------------------------------
@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_storage_rule_and_value_as_mxnet(case, caplog, monkeypatch):
    name, op, inputs, params = case
    want = META[name]
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1")
    monkeypatch.setattr(_sparse_base, "_logged", set())
    caplog.set_level(logging.WARNING, logger="mx.storage_fallback")
    args = [_as(SRC[a], s) for a, s in inputs]
    if "error" in want and "stype" not in want:
        with pytest.raises(ValueError, match=op):
            _call(op, args, **params).wait_to_read()
        return
    out = _call(op, args, **params)
    assert out.stype == want["stype"], name
    assert out.shape == tuple(want["shape"])
    fell_back = any("Storage type fallback" in r.getMessage() for r in caplog.records)
    assert fell_back == want["fallback"], name
    if name in REF:
        np.testing.assert_allclose(out.asnumpy(), REF[name], rtol=2e-6, atol=1e-6)
    elif MXNET_EMPTY_CSR_BUG in want["error"]:
        assert out.asnumpy().shape == tuple(want["shape"])      # ours densifies it
    else:                       # the kernel's error, at the wait as in MXNet
        with pytest.raises(MXNetError, match=op):
            out.asnumpy()
        return
    if out.stype != "default":
        out.check_format()


# --- against NumPy / SciPy (Hypothesis) -------------------------------------------------
def _dense(draw, shape, density, dtype):
    rng = np.random.RandomState(draw(st.integers(0, 2**16)))
    x = rng.randint(-4, 5, size=shape) if np.dtype(dtype).kind in "iu" else rng.randn(*shape)
    if dtype == "uint8":
        x = np.abs(x)
    x = x.astype(dtype)
    x[rng.rand(*shape) >= density] = 0
    x[rng.rand(shape[0]) < 0.3] = 0             # empty rows
    return x


@st.composite
def operands(draw, n=2, dtypes=DTYPES):
    shape = (draw(st.integers(0, 9)), draw(st.integers(0, 8)))
    density = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    dtype = draw(st.sampled_from(dtypes))
    return [_dense(draw, shape, density, dtype) for _ in range(n)]


STYPE_PAIRS = [(s, t) for s in ("default", "row_sparse", "csr")
               for t in ("default", "row_sparse", "csr") if (s, t) != ("default", "default")]


@settings(max_examples=60, deadline=None)
@given(operands(), st.sampled_from(STYPE_PAIRS), st.sampled_from(["add", "sub", "mul"]))
def test_elemwise_against_numpy(xs, stypes, op):
    a, b = xs
    out = _call(f"elemwise_{op}", [_as(a, stypes[0]), _as(b, stypes[1])])
    want = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b)
    np.testing.assert_allclose(out.asnumpy().astype("float64"), want.astype("float64"),
                               rtol=1e-3 if a.dtype == np.float16 else 1e-6)
    if out.stype != "default":
        out.check_format()


@settings(max_examples=40, deadline=None)
@given(operands(dtypes=["float32", "float64"]), st.sampled_from(STYPE_PAIRS))
def test_elemwise_div_against_numpy(xs, stypes):
    a, b = xs
    b = b + np.asarray(1.5, b.dtype)             # a divisor without zeros (stored or not)
    out = _call("elemwise_div", [_as(a, stypes[0]), _as(b, stypes[1])])
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), a / b, rtol=1e-6)


def test_csr_mul_keeps_only_common_entries():
    a = spsp.random(40, 30, density=0.2, format="csr", random_state=1, dtype=np.float64)
    b = spsp.random(40, 30, density=0.2, format="csr", random_state=2, dtype=np.float64)
    out = nd.elemwise_mul(sparse.csr_matrix(a), sparse.csr_matrix(b))
    want = a.multiply(b).tocsr()
    want.sort_indices()
    got = out.asscipy()
    assert out.stype == "csr" and got.nnz == want.nnz
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_allclose(got.data, want.data)


@settings(max_examples=60, deadline=None)
@given(operands(n=1), st.sampled_from(["row", "col", "one", "same"]),
       st.sampled_from(["add", "sub", "mul", "div"]), st.booleans())
def test_broadcast_with_csr_against_numpy(xs, kind, op, csr_left):
    a = xs[0]
    m, n = a.shape
    shape = {"row": (1, n), "col": (m, 1), "one": (1, 1), "same": (m, n)}[kind]
    v = (np.abs(np.random.RandomState(m * 10 + n).randn(*shape)) + 1).astype(a.dtype)
    args = [_as(a, "csr"), nd.array(v, dtype=a.dtype)]
    if not csr_left:
        args.reverse()
    if op == "div" and csr_left and kind == "same" and m != 1 and n != 1:
        with pytest.raises(MXNetError, match="broadcast_div: please use elemwise_div"):
            _call("broadcast_div", args).wait_to_read()
        return
    out = _call(f"broadcast_{op}", args)
    np_a, np_v = (a, v) if csr_left else (v, a)
    if op == "div" and np.dtype(a.dtype).kind in "iu":
        want = _call("broadcast_div", [_as(np_a, "default"), _as(np_v, "default")]).asnumpy()
    else:
        with np.errstate(all="ignore"):     # x / 0 and 0 / 0 are MXNet's inf and nan too
            want = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                    "div": np.divide}[op](np_a, np_v)
    np.testing.assert_allclose(out.asnumpy().astype("float64"), want.astype("float64"),
                               rtol=1e-3 if a.dtype == np.float16 else 1e-6)
    assert out.stype == ("csr" if op in ("mul", "div") and csr_left else "default")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 30), st.integers(1, 5),
       st.sampled_from(DTYPES), st.integers(0, 2**16))
def test_add_n_of_row_sparse_against_numpy(k, rows, width, dtype, seed):
    rng = np.random.RandomState(seed)
    xs = []
    for _ in range(k):
        x = rng.randint(0, 5, size=(rows, width)).astype(dtype)
        x[rng.rand(rows) < 0.6] = 0
        xs.append(x)
    out = nd.add_n(*[_as(x, "row_sparse") for x in xs])
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.asnumpy(), sum(xs[1:], xs[0]))
    out.check_format()
    kept = np.flatnonzero(np.any(np.stack([np.any(x != 0, axis=1) for x in xs]), axis=0))
    np.testing.assert_array_equal(out.indices.asnumpy(), kept)


@settings(max_examples=60, deadline=None)
@given(operands(n=1), st.data())
def test_csr_slice_against_scipy(xs, data):
    a = xs[0]
    m, n = a.shape
    r0, r1 = sorted(data.draw(st.tuples(st.integers(0, m), st.integers(0, m))))
    c0, c1 = sorted(data.draw(st.tuples(st.integers(0, n), st.integers(0, n))))
    csr = _as(a, "csr")
    rows = nd.slice(csr, begin=(r0,), end=(r1,))
    both = nd.slice(csr, begin=(r0, c0), end=(r1, c1))
    for out, want in ((rows, a[r0:r1]), (both, a[r0:r1, c0:c1])):
        assert out.stype == "csr" and out.shape == want.shape
        out.check_format()
        ref = spsp.csr_matrix(want.astype("float64"))       # SciPy has no float16
        np.testing.assert_array_equal(out.asnumpy(), want)
        np.testing.assert_array_equal(out.indptr.asnumpy(), ref.indptr)
        np.testing.assert_array_equal(out.indices.asnumpy(), ref.indices)
    np.testing.assert_array_equal(csr[r0:r1].asnumpy(), a[r0:r1])


@settings(max_examples=40, deadline=None)
@given(operands(n=3), st.sampled_from(DTYPES))
def test_where_with_csr_condition_against_numpy(xs, cond_dtype):
    cond, x, y = xs
    cond = cond.astype(cond_dtype)
    out = nd.where(_as(cond, "csr"), _as(x, "default"), _as(y, "default"))
    assert out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), np.where(cond != 0, x, y))


@settings(max_examples=60, deadline=None)
@given(operands(n=1, dtypes=["float32", "float64", "int32", "int64"]),
       st.sampled_from(["sum", "mean", "norm"]), st.sampled_from([None, 0, 1]),
       st.sampled_from(["csr", "row_sparse"]))
def test_reductions_against_numpy(xs, op, axis, stype):
    a = xs[0]
    if op == "mean" and a.size == 0:
        return                       # NumPy's mean of nothing is nan with a warning
    kw = {} if axis is None else {"axis": axis}
    out = _call(op, [_as(a, stype)], **kw)
    wide = a.astype("float64")
    want = {"sum": lambda: wide.sum(axis=axis), "mean": lambda: wide.mean(axis=axis),
            "norm": lambda: np.sqrt((wide * wide).sum(axis=axis))}[op]()
    want = np.asarray(want).reshape(out.shape)
    if a.dtype.kind in "iu":
        want = np.trunc(want)
    assert out.stype == "default" and out.dtype == a.dtype
    np.testing.assert_allclose(out.asnumpy().astype("float64"), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_zeros_like_clip_negative_copy_keep_the_storage(stype):
    a = SRC["a"]
    x = _as(a, stype)
    z = nd.zeros_like(x)
    assert z.stype == stype and z.data.shape[0] == 0
    np.testing.assert_array_equal(z.asnumpy(), np.zeros_like(a))
    c = nd.clip(x, -0.3, 0.4)
    assert c.stype == stype
    np.testing.assert_allclose(c.asnumpy(), np.clip(a, -0.3, 0.4))
    with pytest.raises(ValueError, match=f"clip: a {stype} input needs a_min <= 0 <= a_max"):
        nd.clip(x, 0.1, 0.4)
    n = nd.negative(x)
    assert n.stype == stype
    np.testing.assert_array_equal(n.asnumpy(), -a)
    o = nd.ones_like(x)
    assert o.stype == "default"
    np.testing.assert_array_equal(o.asnumpy(), np.ones_like(a))


# --- errors ------------------------------------------------------------------------------
def test_bad_shapes_name_the_op_and_shapes():
    csr = _as(SRC["a"], "csr")
    with pytest.raises(ValueError, match=r"elemwise_mul.*\(6, 5\).*\(3, 5\)|"
                                         r"elemwise_mul.*\(3, 5\).*\(6, 5\)"):
        nd.elemwise_mul(csr, nd.ones((3, 5)))
    with pytest.raises(ValueError, match=r"broadcast_mul.*\(6, 5\).*\(2, 5\)|"
                                         r"broadcast_mul.*\(2, 5\).*\(6, 5\)"):
        nd.broadcast_mul(csr, nd.ones((2, 5)))
    with pytest.raises(ValueError, match="add_n"):
        nd.add_n(_as(SRC["a"], "row_sparse"), _as(SRC["a"][:3], "row_sparse"))


def test_malformed_csr_input_is_an_error_naming_the_op():
    bad = sparse.csr_matrix((np.ones(2, "float32"), [3, 1], [0, 2, 2]), shape=(2, 4))
    with pytest.raises(MXNetError, match="broadcast_mul: malformed csr input"):
        nd.broadcast_mul(bad, nd.ones((1, 4))).wait_to_read()


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
@pytest.mark.parametrize("op, fn", [("elemwise_add", np.add), ("elemwise_sub", np.subtract),
                                    ("elemwise_mul", np.multiply)])
@pytest.mark.parametrize("into", ["lhs", "rhs"])
def test_output_that_is_also_an_input(stype, op, fn, into):
    """out=a: the kernel allocates the output's components while it reads
    the input's, so the input reads a snapshot (was: the rows of a lost)."""
    x = np.array([[1, 0, 2], [0, 0, 0], [0, 3, 0], [4, 0, 0]], np.float32)
    y = np.array([[0, 5, 0], [6, 0, 0], [0, 0, 0], [7, 0, 8]], np.float32)
    a, b = nd.array(x).tostype(stype), nd.array(y).tostype(stype)
    out = a if into == "lhs" else b
    got = getattr(nd, op)(a, b, out=out)
    assert got is out and out.stype == stype
    np.testing.assert_array_equal(out.asnumpy(), fn(x, y))
