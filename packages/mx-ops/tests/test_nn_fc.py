"""FullyConnected and _backward_FullyConnected against NumPy."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError


def _ref(x, w, b, flatten):
    x2 = x.reshape(x.shape[0], -1) if flatten else x
    out = x2.astype(np.float64) @ w.astype(np.float64).T
    return out + b if b is not None else out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("no_bias", [True, False])
def test_forward_every_req(nn, dtype, flatten, no_bias):
    rng = np.random.default_rng(0)
    for shape in [(5, 7), (3, 4, 6), (2, 1, 3, 5)]:
        x = rng.standard_normal(shape).astype(dtype)
        k = int(np.prod(shape[1:])) if flatten else shape[-1]
        n = int(rng.integers(1, 9))
        w = rng.standard_normal((n, k)).astype(dtype)
        b = None if no_bias else rng.standard_normal(n).astype(dtype)
        inputs = [x, w] if no_bias else [x, w, b]
        params = dict(num_hidden=n, no_bias=no_bias, flatten=flatten)
        nn.check_reqs("FullyConnected", inputs, [_ref(x, w, b, flatten)], params, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("no_bias", [True, False])
def test_backward_every_req(nn, dtype, no_bias):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 2, 3)).astype(dtype)
    w = rng.standard_normal((5, 6)).astype(dtype)
    og = rng.standard_normal((4, 5)).astype(dtype)
    x2 = x.reshape(4, 6).astype(np.float64)
    want = [(og.astype(np.float64) @ w).reshape(x.shape), og.astype(np.float64).T @ x2]
    if not no_bias:
        want.append(og.astype(np.float64).sum(0))
    nn.check_reqs("_backward_FullyConnected", [og, x, w], want,
               dict(num_hidden=5, no_bias=no_bias), dtype)


def test_backward_matches_finite_differences(nn):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    w = rng.standard_normal((2, 4))
    b = rng.standard_normal(2)
    og = rng.standard_normal((3, 2))
    dx, dw, db = invoke("_backward_FullyConnected", [og, x, w], num_hidden=2)
    fc = lambda x_, w_, b_: invoke("FullyConnected", [x_, w_, b_], num_hidden=2)
    np.testing.assert_allclose(dx, nn.numeric_grad(lambda v: fc(v, w, b), x, og), atol=1e-7)
    np.testing.assert_allclose(dw, nn.numeric_grad(lambda v: fc(x, v, b), w, og), atol=1e-7)
    np.testing.assert_allclose(db, nn.numeric_grad(lambda v: fc(x, w, v), b, og), atol=1e-7)


def test_req_per_output():
    rng = np.random.default_rng(4)
    x, w, og = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal((3, 2))
    outs = [np.ones((3, 4)), np.ones((2, 4)), np.ones(2)]
    invoke("_backward_FullyConnected", [og, x, w], out=outs, req=["null", "add", "write"],
           num_hidden=2)
    np.testing.assert_array_equal(outs[0], 1)
    np.testing.assert_allclose(outs[1], 1 + og.T @ x)
    np.testing.assert_allclose(outs[2], og.sum(0))


def test_input_names_follow_no_bias():
    op = get("FullyConnected")
    assert op.input_names(op.parse_params({"num_hidden": 3})) == ["data", "weight", "bias"]
    assert op.input_names(op.parse_params({"num_hidden": 3, "no_bias": True})) == \
        ["data", "weight"]
    with pytest.raises(ValueError, match=r"FullyConnected: takes 2 input\(s\) \(data, weight\)"):
        invoke("FullyConnected", [np.ones((2, 3))] * 3, num_hidden=3, no_bias=True)


def test_errors_name_argument_and_shapes():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ShapeError, match=r"FullyConnected: argument 'weight' has shape "
                                         r"\(4, 2\), expected \(4, 3\)"):
        invoke("FullyConnected", [x, np.ones((4, 2), np.float32), np.ones(4, np.float32)],
               num_hidden=4)
    with pytest.raises(ShapeError, match=r"argument 'bias' has shape \(3,\), expected \(4,\)"):
        invoke("FullyConnected", [x, np.ones((4, 3), np.float32), np.ones(3, np.float32)],
               num_hidden=4)
    with pytest.raises(TypeInferenceError, match="argument 'weight' has dtype float64"):
        invoke("FullyConnected", [x, np.ones((4, 3)), np.ones(4, np.float32)], num_hidden=4)
    with pytest.raises(ShapeError, match="_backward_FullyConnected: argument 'out_grad'"):
        invoke("_backward_FullyConnected", [np.ones((2, 5)), np.ones((2, 3)), np.ones((4, 3))],
               num_hidden=4)


# ------------------------------------------------ the CPU kernel's own paths
# ops/nn/fc_cpu.h on ops/nn/gemm_cpu.h: every instruction set, 1-3 threads, both
# splits (row blocks when batch >= hidden, else column blocks), the skinny
# forward (batch <= 256: weight read in place, out^T blocks), K and
# batch 0, and the workspace (TEMP_SPACE).
from mx_engine.base import MXNetError  # noqa: E402
from mx_ops.ops.nn import _conv_cpu, _fc_cpu  # noqa: E402


@pytest.fixture(params=_fc_cpu.available_isas())
def isa(request):
    old = _fc_cpu.set_isa(request.param)
    yield request.param
    _fc_cpu.set_isa(old)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("m,k,n", [(64, 300, 520), (520, 70, 33), (300, 40, 700), (7, 1, 200),
                                   (1, 64, 1)])
def test_large_every_isa_and_thread_count(isa, threads, m, k, n):
    rng = np.random.default_rng(m + n)
    old = _conv_cpu.set_max_threads(threads)
    try:
        for dtype in ("float32", "float64"):
            x = rng.standard_normal((m, k)).astype(dtype)
            w = rng.standard_normal((n, k)).astype(dtype)
            b = rng.standard_normal(n).astype(dtype)
            og = rng.standard_normal((m, n)).astype(dtype)
            tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(invoke("FullyConnected", [x, w, b], num_hidden=n),
                                       _ref(x, w, b, True), **tol)
            base = rng.standard_normal((m, n)).astype(dtype)
            out = base.copy()
            invoke("FullyConnected", [x, w, b], out=out, req="add", num_hidden=n)
            np.testing.assert_allclose(out, base + _ref(x, w, b, True), **tol)
            got = invoke("_backward_FullyConnected", [og, x, w], num_hidden=n)
            want = [og.astype(np.float64) @ w, og.astype(np.float64).T @ x, og.sum(0)]
            for g, e in zip(got, want):
                np.testing.assert_allclose(g, e, **tol)
    finally:
        _conv_cpu.set_max_threads(old)


def test_empty_batch_and_inputs():
    w = np.ones((3, 0), np.float32)
    got = invoke("FullyConnected", [np.ones((2, 0), np.float32), w, np.arange(3, dtype=np.float32)],
                 num_hidden=3)
    np.testing.assert_array_equal(got, [[0, 1, 2], [0, 1, 2]])
    dx, dw, db = invoke("_backward_FullyConnected", [np.ones((0, 3)), np.ones((0, 4)),
                                                     np.ones((3, 4))], num_hidden=3)
    assert dx.shape == (0, 4)
    np.testing.assert_array_equal(dw, np.zeros((3, 4)))
    np.testing.assert_array_equal(db, np.zeros(3))


def test_workspace_short_means_fewer_threads_then_an_error(monkeypatch):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((64, 200)), rng.standard_normal((300, 200))
    want = invoke("FullyConnected", [x, w], num_hidden=300, no_bias=True)
    op = get("FullyConnected")
    old = _conv_cpu.set_max_threads(3)
    try:
        three = op.workspace(op.parse_params(dict(num_hidden=300)), [x.shape, w.shape])
        one = _fc_cpu.workspace_bytes(False, 64, 200, 300, threads=1)
        assert one < three
        monkeypatch.setattr(op, "workspace", lambda p, s: one)
        np.testing.assert_allclose(invoke("FullyConnected", [x, w], num_hidden=300,
                                          no_bias=True), want, rtol=1e-12)
        monkeypatch.setattr(op, "workspace", lambda p, s: 100)
        with pytest.raises(MXNetError, match=r"^FullyConnected: the workspace \(TEMP_SPACE\) "
                                             r"holds 100 bytes, but this call needs \d+"):
            invoke("FullyConnected", [x, w], num_hidden=300, no_bias=True)
    finally:
        _conv_cpu.set_max_threads(old)
