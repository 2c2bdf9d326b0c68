import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError

RNG = np.random.default_rng(5)
TOL = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-12}


def ref_dot(a, b, ta, tb):
    """MXNet's dot via NumPy: lhs folded to 2-d on its last axis (or first,
    transposed), rhs on its first axis (or last, transposed)."""
    if a.ndim == 1 and b.ndim == 1:
        return np.array([np.dot(a, b)])
    prod = lambda s: int(np.prod(s, dtype=np.int64))
    A = (a.reshape(a.shape[0], prod(a.shape[1:])).T if ta
         else a.reshape(prod(a.shape[:-1]), a.shape[-1]))
    B = (b.reshape(prod(b.shape[:-1]), b.shape[-1]).T if tb
         else b.reshape(b.shape[0], prod(b.shape[1:])))
    lout = (a.shape[1:] if ta else a.shape[:-1]) if a.ndim > 1 else ()
    rout = (b.shape[:-1] if tb else b.shape[1:]) if b.ndim > 1 else ()
    return (A @ B).reshape(lout + rout or (1,))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("sa, sb, ta, tb", [
    ((3, 4), (4, 5), False, False), ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True), ((4, 3), (5, 4), True, True),
    ((7,), (7,), False, False), ((7,), (7, 2), False, False), ((3, 7), (7,), False, False),
    ((2, 3, 4), (4, 5), False, False), ((2, 3, 4), (4, 2, 5), False, False),
    ((4, 2, 3), (4, 5), True, False), ((1, 1), (1, 1), False, False),
    ((3, 0), (0, 4), False, False), ((0, 4), (4, 2), False, False),
    ((64, 33), (33, 17), False, False),
])
def test_dot_matches_numpy(dtype, sa, sb, ta, tb):
    a = RNG.uniform(-1, 1, sa).astype(dtype)
    b = RNG.uniform(-1, 1, sb).astype(dtype)
    want = ref_dot(a.astype(np.float64), b.astype(np.float64), ta, tb)
    got = invoke("dot", [a, b], transpose_a=ta, transpose_b=tb)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=TOL[dtype], atol=TOL[dtype])


def test_dot_accumulates_with_req_add():
    a, b = RNG.random((3, 4)), RNG.random((4, 2))
    out = np.ones((3, 2))
    invoke("dot", [a, b], out=out, req="add")
    np.testing.assert_allclose(out, 1 + a @ b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_dot(dtype, ta, tb):
    a = RNG.uniform(-1, 1, (5, 4, 3) if ta else (5, 3, 4)).astype(dtype)
    b = RNG.uniform(-1, 1, (5, 2, 4) if tb else (5, 4, 2)).astype(dtype)
    A = a.astype(np.float64).transpose(0, 2, 1) if ta else a.astype(np.float64)
    B = b.astype(np.float64).transpose(0, 2, 1) if tb else b.astype(np.float64)
    got = invoke("batch_dot", [a, b], transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(got.astype(np.float64), A @ B, rtol=TOL[dtype], atol=TOL[dtype])
    four = invoke("batch_dot", [a.reshape((1,) + a.shape), b.reshape((1,) + b.shape)],
                  transpose_a=ta, transpose_b=tb)
    assert four.shape == (1,) + got.shape


@pytest.mark.parametrize("call, exc, text", [
    (lambda: invoke("dot", [np.ones((2, 3)), np.ones((4, 5))]), ShapeError,
     "dot: argument 'rhs' has shape (4, 5), whose contracted axis (4) differs from that of "
     "'lhs' (2, 3) (3)"),
    (lambda: invoke("dot", [np.ones(3), np.ones(4)]), ShapeError, "does not match 'lhs' (3,)"),
    (lambda: invoke("dot", [np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)]),
     TypeInferenceError, "dot: dtype int32 is not supported"),
    (lambda: invoke("batch_dot", [np.ones((2, 3)), np.ones((3, 2))]), ShapeError,
     "must both be at least 3-d"),
])
def test_dot_errors(call, exc, text):
    with pytest.raises(exc) as info:
        call()
    assert text in str(info.value)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("batch", [1, 3, 9])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_products_take_the_gemm_core(ta, tb, batch, dtype):
    # M*N*K above the BLAS cut (dot_cpu.h's kBlasSingleThreadMNK): the
    # GEMM core, split into blocks (few products) or one item per product.
    rng = np.random.default_rng(batch)
    m, n, k = 70, 60, 80
    a = rng.standard_normal((batch, k, m) if ta else (batch, m, k)).astype(dtype)
    b = rng.standard_normal((batch, n, k) if tb else (batch, k, n)).astype(dtype)
    want = np.matmul(np.swapaxes(a, 1, 2) if ta else a, np.swapaxes(b, 1, 2) if tb else b)
    tol = 1e-4 if dtype == "float32" else 1e-11
    if batch:
        got = invoke("batch_dot", [a, b], transpose_a=ta, transpose_b=tb)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        acc = np.ones(want.shape, dtype)
        invoke("batch_dot", [a, b], out=acc, req="add", transpose_a=ta, transpose_b=tb)
        np.testing.assert_allclose(acc, want + 1, rtol=tol, atol=tol)
    if batch == 1:
        got = invoke("dot", [a[0], b[0]], transpose_a=ta, transpose_b=tb)
        np.testing.assert_allclose(got, want[0], rtol=tol, atol=tol)
