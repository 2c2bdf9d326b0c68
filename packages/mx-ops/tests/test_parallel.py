"""Kernels large enough to be split across threads (src/parallel.h) give
the same results as NumPy, including the ranges' edges, and still work in
a forked child (which runs them serially)."""
import multiprocessing

import numpy as np
import pytest

from mx_ops import invoke

# Above kParallelMinElements (2**17), and not a multiple of the 64-element
# range granularity, so the last range is ragged.
N = (1 << 19) + 37
RNG = np.random.default_rng(11)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
def test_large_elementwise_kernels_match_numpy(dtype):
    a = (RNG.random(N) * 100).astype(dtype)
    b = (RNG.random(N) * 100 + 1).astype(dtype)
    np.testing.assert_array_equal(invoke("elemwise_add", [a, b]), a + b)
    np.testing.assert_array_equal(invoke("_mul_scalar", [a], scalar=3), a * dtype_cast(3, dtype))
    np.testing.assert_array_equal(invoke("negative", [a]), -a)
    np.testing.assert_array_equal(invoke("Cast", [a], dtype="float64"), a.astype(np.float64))
    out = b.copy()
    invoke("elemwise_sub", [a, b], out=out, req="add")
    wide = np.float32 if dtype == "float16" else dtype      # float16 computes in float
    want = (b.astype(wide) + (a.astype(wide) - b.astype(wide))).astype(dtype)
    np.testing.assert_array_equal(out, want)
    full = invoke("_full", [], shape=(N,), dtype=dtype, value=7)
    assert full.dtype == np.dtype(dtype) and (full == 7).all()


def dtype_cast(value, dtype):
    return np.dtype(dtype).type(value)


def _child(queue):
    a = np.arange(N, dtype=np.float32)
    queue.put(float(invoke("elemwise_add", [a, a])[-1]))


def test_a_forked_child_runs_large_kernels():
    a = np.ones(N, np.float32)
    invoke("elemwise_add", [a, a])       # the parent's thread team exists now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue,))
    proc.start()
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        pytest.fail("a large kernel hung in a forked child")
    assert proc.exitcode == 0 and queue.get(timeout=5) == 2.0 * (N - 1)


@pytest.mark.parametrize("shape, axis", [((1100, 700), 0), ((1100, 700), 1), ((3, 700, 300), 1),
                                         ((3, 700, 300), (0, 2)), ((40, 3000, 5), 1)])
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_large_reductions_match_numpy(shape, axis, op):
    x = RNG.random(shape).astype(np.float32)
    want = getattr(np, op)(x.astype(np.float64), axis=axis)
    np.testing.assert_allclose(invoke(op, [x], axis=axis), want, rtol=1e-5)
    out = np.ones(want.shape, np.float32)
    invoke(op, [x], axis=axis, out=out, req="add")
    np.testing.assert_allclose(out, want + 1, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_outputs_beyond_the_caches_are_streamed_exactly(dtype):
    # Over kStreamMinBytes (16 MiB): the streaming-store path, with an output
    # that starts off a 16-byte boundary and a length that ends mid-buffer.
    n = (20 << 20) // np.dtype(dtype).itemsize + 5
    a = (RNG.random(n) * 10).astype(dtype)
    b = (RNG.random(n) * 10).astype(dtype)
    backing = np.zeros(n + 1, dtype)
    out = backing[1:]
    invoke("elemwise_mul", [a, b], out=out)
    np.testing.assert_array_equal(out, (a * b) if dtype != "float16"
                                  else (a.astype(np.float32) * b).astype(dtype))
    assert backing[0] == 0
    invoke("_rminus_scalar", [a], out=out, scalar=1)
    np.testing.assert_array_equal(out, (1 - a.astype(np.float32)).astype(dtype)
                                  if dtype == "float16" else 1 - a)
    invoke("exp", [a], out=out)
    np.testing.assert_allclose(out, np.exp(a.astype(np.float64)), rtol=2e-3 if dtype == "float16"
                               else 1e-6)
