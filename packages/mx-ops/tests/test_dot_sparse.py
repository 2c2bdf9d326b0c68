"""dot with sparse operands (mx_ops.ops.dot.dot_sparse): the storage rules
against MXNet 1.9.1's own table (tests/data/dot_mxnet191.json, written by
make_dot_reference.py), the sparse kernels against MXNet's outputs and
against SciPy over Hypothesis-drawn shapes and densities, _backward_dot's
rule and kernel, thread-count independence and the errors."""
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from mx_ops.core import registry
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               SparseBlob)
from mx_ops.ops.dot import _dot_sparse_cpu
from mx_ops.ops.dot.dot_sparse import backward_dot_storage, dot_storage
from mx_ops.ops.nn._conv_cpu import set_max_threads
from mx_ops.ops.sparse import _sparse_cpu

DATA = Path(__file__).parent / "data"
REF = json.loads((DATA / "dot_mxnet191.json").read_text())
TOL = {"float32": 1e-5, "float64": 1e-12}


def params(ta=False, tb=False, fwd=None):
    return {"transpose_a": ta, "transpose_b": tb, "forward_stype": fwd}


def to_blob(x, stype):
    """NumPy ``x`` in storage ``stype`` (a SparseBlob, or ``x`` itself)."""
    if stype == "default":
        return np.ascontiguousarray(x)
    blob = SparseBlob(stype, x.shape, x.dtype, zero=False)
    (_sparse_cpu.dense_to_csr if stype == "csr" else _sparse_cpu.dense_to_rsp)(
        np.ascontiguousarray(x), blob)
    return blob


def dense_of(out):
    if not isinstance(out, SparseBlob):
        return out
    dense = np.zeros(out.shape, out.dtype)
    if out.stype == "csr":
        _sparse_cpu.csr_to_dense(out, dense)
    else:
        _sparse_cpu.rsp_to_dense(out, dense)
    return dense


def run(op, prm, inputs, out_shapes, out_stypes, dtype, reqs=None):
    """Our sparse compute of ``op`` on ``inputs`` (numpy or SparseBlob)."""
    outs = [np.full(s, np.nan, dtype) if t == "default" else SparseBlob(t, s, dtype, zero=False)
            for s, t in zip(out_shapes, out_stypes)]
    registry.get(op).sparse_compute["cpu"](prm, inputs, outs, reqs or ["write"] * len(outs))
    return outs


def parse(key):
    ls, rs, ta, tb, fwd = key.split(",")[:5]
    fwd = fwd.split("=")[1]
    return ls, rs, ta == "ta=1", tb == "tb=1", None if fwd == "None" else fwd


# --- forward: MXNet's table --------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(REF["forward"]))
def test_storage_rule_matches_mxnet(key):
    ls, rs, ta, tb, fwd = parse(key)
    want = REF["forward"][key]
    stypes, mode = dot_storage(params(ta, tb, fwd), [ls, rs], "cpu")
    if "error" in want:
        # MXNet 1.9.1 dispatches csr.T x rsp -> dense and then refuses
        # ("not implemented yet"); ours computes it (test below).
        assert (ls, rs, ta, tb, fwd) == ("csr", "row_sparse", True, False, "default")
        assert stypes == ["default"] and mode != DISPATCH_FALLBACK
        return
    assert stypes == [want["stype"]]
    assert (mode == DISPATCH_FALLBACK) == want["fallback"]


@pytest.mark.parametrize("key", sorted(k for k, v in REF["forward"].items() if "error" not in v))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_mxnet(key, dtype):
    """Where our rule picks a sparse kernel, its values are MXNet's."""
    ls, rs, ta, tb, fwd = parse(key)
    stypes, mode = dot_storage(params(ta, tb, fwd), [ls, rs], "cpu")
    if mode == DISPATCH_COMPUTE_EX:
        lhs, rhs = (np.load(DATA / "dot_mxnet191.npz")[f"{key}|{dtype}|{n}"]
                    for n in ("lhs", "rhs"))
        want = np.load(DATA / "dot_mxnet191.npz")[f"{key}|{dtype}|out"]
        (out,) = run("dot", params(ta, tb, fwd), [to_blob(lhs, ls), to_blob(rhs, rs)],
                     [want.shape], stypes, dtype)
        assert (out.stype if isinstance(out, SparseBlob) else "default") == stypes[0]
        np.testing.assert_allclose(dense_of(out), want, rtol=TOL[dtype], atol=TOL[dtype])


def test_csr_t_times_rsp_to_dense():
    """MXNet refuses dot(csr.T, rsp) with forward_stype='default'; ours
    gives the product."""
    rng = np.random.default_rng(3)
    a = sp.random(7, 5, density=0.4, random_state=1, format="csr").toarray()
    b = rng.standard_normal((7, 3))
    b[[1, 4]] = 0
    (out,) = run("dot", params(True, False, "default"), [to_blob(a, "csr"), to_blob(b, "row_sparse")],
                 [(5, 3)], ["default"], "float64")
    np.testing.assert_allclose(out, a.T @ b, rtol=1e-12)


def test_stored_rows_and_columns_follow_mxnet():
    """csr.T x dense keeps the rows of the csr's columns (zero or not);
    dense x csr stores the union of the csr's columns in every row."""
    lhs = np.array([[0, 1, 0], [0, 0, 0], [2, 0, 0], [0, 0, 0]], np.float32)
    rhs = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    (out,) = run("dot", params(True), [to_blob(lhs, "csr"), rhs], [(3, 2)], ["row_sparse"],
                 "float32")
    assert out.indices.tolist() == [0, 1]
    rsp = rhs.copy()
    rsp[[1, 2]] = 0
    (out,) = run("dot", params(True), [to_blob(lhs, "csr"), to_blob(rsp, "row_sparse")],
                 [(3, 2)], ["row_sparse"], "float32")
    assert out.indices.tolist() == [1]
    a = np.array([[1, 0, 0], [0, 0, 0], [0, 2, 0]], np.float32)
    c = np.array([[0, 1, 0, 0], [0, 0, 0, 3], [5, 0, 0, 0]], np.float32)
    (out,) = run("dot", params(), [a, to_blob(c, "csr")], [(3, 4)], ["csr"], "float32")
    assert out.indptr.tolist() == [0, 3, 6, 9]
    assert out.indices.tolist() == [0, 1, 3] * 3
    np.testing.assert_array_equal(out.data, [0, 1, 0, 0, 0, 0, 0, 0, 6])


# --- forward: SciPy over drawn shapes and densities ------------------------------------
def sparse_matrix(draw, shape, dtype):
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    seed = draw(st.integers(0, 2 ** 16))
    m = sp.random(*shape, density=density, random_state=seed, format="csr", dtype=dtype)
    dense = m.toarray()
    if shape[0] > 1 and draw(st.booleans()):
        dense[: shape[0] // 2] = 0               # a run of empty rows
    return dense


@st.composite
def dot_cases(draw):
    m, k, n = (draw(st.integers(0, 9)) for _ in range(3))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    kind = draw(st.sampled_from(["csr.dns", "csr.rsp", "csrT.dns", "csrT.rsp", "dns.csr",
                                 "dns.csrT"]))
    fwd = draw(st.sampled_from([None, "default"]))
    ta, tb = kind.startswith("csrT"), kind.endswith("csrT")
    lshape = (k, m) if ta else (m, k)
    rshape = (n, k) if tb else (k, n)
    lhs = sparse_matrix(draw, lshape, dtype)
    rhs = sparse_matrix(draw, rshape, dtype)
    return kind, ta, tb, fwd, lhs, rhs, dtype


@settings(max_examples=150, deadline=None)
@given(dot_cases())
def test_dot_matches_scipy(case):
    kind, ta, tb, fwd, lhs, rhs, dtype = case
    ls = "csr" if kind.startswith("csr") else "default"
    rs = {"dns": "default", "rsp": "row_sparse"}.get(kind.split(".")[1], "csr")
    stypes, mode = dot_storage(params(ta, tb, fwd), [ls, rs], "cpu")
    if mode == DISPATCH_FALLBACK:
        return
    A = sp.csr_matrix(lhs) if ls == "csr" else lhs
    B = sp.csr_matrix(rhs) if rs == "csr" else rhs
    want = (A.T if ta else A) @ (B.T if tb else B)
    want = want.toarray() if sp.issparse(want) else np.asarray(want)
    (out,) = run("dot", params(ta, tb, fwd), [to_blob(lhs, ls), to_blob(rhs, rs)],
                 [want.shape], stypes, dtype)
    np.testing.assert_allclose(dense_of(out), want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_results_do_not_depend_on_threads(dtype):
    """Each output row is summed by one thread in the entries' order: one
    thread and many give identical bits, csr.T (the transpose) included."""
    csr = sp.random(3000, 700, density=0.05, random_state=2, format="csr", dtype=dtype).toarray()
    w = np.random.default_rng(0).standard_normal((700, 96)).astype(dtype)
    g = np.random.default_rng(1).standard_normal((3000, 96)).astype(dtype)
    results = []
    for threads in (1, 4):
        old = set_max_threads(threads)
        try:
            (y,) = run("dot", params(), [to_blob(csr, "csr"), w], [(3000, 96)], ["default"], dtype)
            (t,) = run("dot", params(True), [to_blob(csr, "csr"), g], [(700, 96)],
                       ["row_sparse"], dtype)
        finally:
            set_max_threads(old)
        results.append((y, t.indices, t.data))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(results[0][0], csr @ w, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


# --- _backward_dot ------------------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(REF["backward"]))
def test_backward_storage_matches_mxnet(key):
    """MXNet's rule with the gradient array's storage given (autograd's
    attach_grad): a rule output that differs means the fallback."""
    ls, rs, ta, tb, _ = parse(key)
    want = REF["backward"][key]
    grad_stype = key.split("grad=")[1]
    stypes, mode = backward_dot_storage(params(ta, tb), ["default", ls, rs], "cpu")
    rule = stypes[1] if ls == "csr" else stypes[0]
    assert want["grad_stype"] == grad_stype
    assert want["fallback"] == (mode == DISPATCH_FALLBACK or rule != grad_stype)


@pytest.mark.parametrize("key", sorted(REF["backward"]))
def test_backward_values_match_mxnet(key):
    ls, rs, ta, tb, _ = parse(key)
    ref = np.load(DATA / "dot_mxnet191.npz")
    ograd, lhs, rhs, grad = (ref[f"bwd|{key}|float32|{n}"]
                             for n in ("ograd", "lhs", "rhs", "grad"))
    stypes, mode = backward_dot_storage(params(ta, tb), ["default", ls, rs], "cpu")
    reqs = ["null", "write"] if ls == "csr" else ["write", "null"]
    outs = run("_backward_dot", params(ta, tb), [ograd, to_blob(lhs, ls), to_blob(rhs, rs)],
               [lhs.shape, rhs.shape], stypes, "float32", reqs)
    got = dense_of(outs[1] if ls == "csr" else outs[0])
    np.testing.assert_allclose(got, grad, rtol=1e-5, atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 8), st.integers(0, 8), st.integers(0, 6), st.booleans(),
       st.sampled_from(["float32", "float64"]), st.data())
def test_backward_rhs_grad_is_csr_t_times_ograd(m, k, n, ta, dtype, data):
    """dot(csr, W)'s W gradient: row_sparse dot(csr.T, ograd) (NumPy), and
    the csr's own (dense) gradient where asked."""
    lhs = sparse_matrix(data.draw, (k, m) if ta else (m, k), dtype)
    rhs = np.random.default_rng(m * 81 + k * 9 + n).standard_normal((k, n)).astype(dtype)
    ograd = np.random.default_rng(n).standard_normal((m, n)).astype(dtype)
    stypes, mode = backward_dot_storage(params(ta), ["default", "csr", "default"], "cpu")
    assert stypes == ["default", "default" if ta else "row_sparse"]
    glhs, grhs = run("_backward_dot", params(ta), [ograd, to_blob(lhs, "csr"), rhs],
                     [lhs.shape, rhs.shape], stypes, dtype)
    L = lhs.T if ta else lhs
    np.testing.assert_allclose(dense_of(grhs), L.T @ ograd, rtol=TOL[dtype], atol=TOL[dtype])
    want_lhs = ograd @ rhs.T
    np.testing.assert_allclose(glhs, want_lhs.T if ta else want_lhs, rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10)
    if not ta:      # only the rows of columns the csr uses are stored
        assert set(grhs.indices.tolist()) == set(np.flatnonzero(lhs.any(axis=0)).tolist())


def test_backward_dense_rule_and_kernel():
    rng = np.random.default_rng(4)
    a, b, g = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((3, 5))
    assert backward_dot_storage(params(False, True), ["default"] * 3, "cpu")[1] == DISPATCH_COMPUTE
    ga, gb = np.empty((3, 4)), np.empty((5, 4))
    registry.get("_backward_dot").compute["cpu"](params(False, True), [g, a, b], [ga, gb],
                                                  ["write", "write"])
    np.testing.assert_allclose(ga, g @ b, rtol=1e-12)
    np.testing.assert_allclose(gb, g.T @ a, rtol=1e-12)


# --- errors ---------------------------------------------------------------------------------
def test_out_of_range_column_is_an_error():
    blob = to_blob(np.eye(3, dtype=np.float32), "csr")
    blob.indices[1] = 7
    with pytest.raises(IndexError, match=r"dot: argument 'lhs' \(csr\) has a column index "
                                         r"outside \[0, 3\)"):
        run("dot", params(), [blob, np.ones((3, 2), np.float32)], [(3, 2)], ["default"],
            "float32")
    with pytest.raises(IndexError, match="outside"):
        run("dot", params(True), [blob, np.ones((3, 2), np.float32)], [(3, 2)],
            ["row_sparse"], "float32")
    blob.indptr[2] = 99
    with pytest.raises(ValueError, match="'lhs' is a malformed csr array"):
        run("dot", params(), [blob, np.ones((3, 2), np.float32)], [(3, 2)], ["default"],
            "float32")


def test_float16_is_refused_as_mxnet_does():
    x = np.eye(3, dtype=np.float16)
    with pytest.raises(TypeError, match="float32 and float64 only"):
        run("dot", params(), [to_blob(x, "csr"), x], [(3, 3)], ["default"], "float16")


def test_shape_error_names_shapes_and_flags():
    from mx_ops.ops.dot.dot import dot_shape
    with pytest.raises(registry.ShapeError, match=r"'rhs' has shape \(5, 2\).*'lhs' \(4, 3\).*"
                                                  r"transpose_a=True, transpose_b=False"):
        dot_shape((4, 3), (5, 2), True, False)


def test_kernels_take_empty_operands():
    """No rows, no columns, no stored values."""
    e = np.zeros((0,), np.float32)
    ip = np.zeros(1, np.int64)
    assert _dot_sparse_cpu.csr_times_dense(e, ip, ip[:0], 5, np.zeros((5, 3), np.float32),
                                           np.zeros((0, 3), np.float32))
    assert _dot_sparse_cpu.columns_with_entries(ip, ip[:0], 4).tolist() == []
    out = np.full((4, 3), np.nan, np.float32)
    _dot_sparse_cpu.csr_t_times_dense(e, ip, ip[:0], 4, np.zeros((0, 3), np.float32), out)
    assert not out.any()
