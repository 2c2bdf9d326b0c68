"""Sparse dot through ``import mx``: mx.nd.dot / mx.nd.sparse.dot on every
storage combination against MXNet 1.9.1's own outputs and storage types
(packages/mx-ops/tests/data/dot_mxnet191.*, written by
make_dot_reference.py), the fallback log, forward_stype, and
_backward_dot called directly."""
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import mx
import mx_ndarray

DATA = Path(__file__).resolve().parent.parent / "packages" / "mx-ops" / "tests" / "data"
REF = json.loads((DATA / "dot_mxnet191.json").read_text())
NPZ = np.load(DATA / "dot_mxnet191.npz")


def parse(key):
    ls, rs, ta, tb, fwd = key.split(",")[:5]
    fwd = fwd.split("=")[1]
    return ls, rs, ta == "ta=1", tb == "tb=1", None if fwd == "None" else fwd


def as_stype(x, stype, dtype):
    a = mx.nd.array(x, dtype=dtype)
    return a if stype == "default" else a.tostype(stype)


@pytest.mark.parametrize("key", sorted(k for k, v in REF["forward"].items() if "error" not in v))
def test_mx_nd_dot_matches_mxnet(key, monkeypatch):
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
    ls, rs, ta, tb, fwd = parse(key)
    kwargs = {"transpose_a": ta, "transpose_b": tb}
    if fwd is not None:
        kwargs["forward_stype"] = fwd
    for dtype in ("float32", "float64"):
        lhs, rhs, want = (NPZ[f"{key}|{dtype}|{n}"] for n in ("lhs", "rhs", "out"))
        fn = mx.nd.sparse.dot if dtype == "float64" else mx.nd.dot
        out = fn(as_stype(lhs, ls, dtype), as_stype(rhs, rs, dtype), **kwargs)
        assert out.stype == REF["forward"][key]["stype"]
        assert out.dtype == np.dtype(dtype)
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(out.asnumpy(), want, rtol=tol, atol=tol)


def test_fallback_is_logged_as_mxnet(monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="mx.storage_fallback")
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1")
    a = mx.nd.array(np.eye(3, 4, dtype="float32")).tostype("csr")
    b = mx.nd.ones((2, 4)).tostype("csr")
    out = mx.nd.dot(a, b, transpose_b=True)          # csr x csr: no kernel (as MXNet)
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), np.eye(3, 4) @ np.ones((4, 2)))
    text = caplog.records[-1].getMessage()
    assert "operator = dot\ninput storage types = [csr, csr, ]\noutput storage types = " \
           "[default, ]" in text


def test_kernels_log_nothing(monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="mx.storage_fallback")
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1")
    a = mx.nd.array(np.eye(5, 4, dtype="float32")).tostype("csr")
    assert mx.nd.dot(a, mx.nd.ones((4, 3))).stype == "default"
    assert mx.nd.dot(a, mx.nd.ones((5, 3)), transpose_a=True).stype == "row_sparse"
    assert mx.nd.dot(mx.nd.ones((2, 5)), a).stype == "csr"
    assert not caplog.records


def test_backward_dot_gives_a_row_sparse_weight_gradient():
    """_backward_dot(ograd, csr, W): W's gradient is row_sparse dot(csr.T,
    ograd), kept on the rows of the csr's columns."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 8)).astype("float32")
    x[x < 0.8] = 0
    w = rng.standard_normal((8, 3)).astype("float32")
    g = rng.standard_normal((6, 3)).astype("float32")
    lhs_grad, rhs_grad = mx_ndarray.invoke(
        "_backward_dot", [mx.nd.array(g), mx.nd.array(x).tostype("csr"), mx.nd.array(w)])
    assert rhs_grad.stype == "row_sparse" and lhs_grad.stype == "default"
    np.testing.assert_allclose(rhs_grad.asnumpy(), x.T @ g, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(rhs_grad.indices.asnumpy(), np.flatnonzero(x.any(axis=0)))
    np.testing.assert_allclose(lhs_grad.asnumpy(), g @ w.T, rtol=1e-5, atol=1e-6)


def test_shape_mismatch_names_dot_shapes_and_flags():
    a = mx.nd.array(np.eye(3, 4, dtype="float32")).tostype("csr")
    with pytest.raises(mx.base.MXNetError, match=r"dot: argument 'rhs' has shape \(5, 2\).*"
                       r"'lhs' \(3, 4\).*transpose_a=False, transpose_b=False"):
        mx.nd.dot(a, mx.nd.ones((5, 2)))
    with pytest.raises(mx.base.MXNetError, match=r"transpose_a=True"):
        mx.nd.dot(a, mx.nd.ones((4, 2)), transpose_a=True)


def test_float16_sparse_dot_is_refused_at_wait():
    a = mx.nd.array(np.eye(3), dtype="float16").tostype("csr")
    out = mx.nd.dot(a, mx.nd.ones((3, 2), dtype="float16"))
    with pytest.raises(Exception, match="float32 and float64 only"):
        out.asnumpy()
