"""Sparse arrays on a GPU against the CPU: cast_storage's CuPy twin both
ways for every dtype, row_sparse + row_sparse, csr + csr (falls back on a
GPU and casts back), the zero-preserving unary ops, copies across devices
and the kernels' input checks.  Needs CuPy and a CUDA device (skipped
otherwise)."""
import numpy as np
import pytest

from mx_engine import MXNetError, cpu, gpu
import mx_ndarray as nd
from mx_ndarray import sparse

pytestmark = pytest.mark.gpu

ALL = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 5, size=shape).astype(dtype)
    x[rng.random(shape) < 0.7] = 0
    return x


@pytest.mark.parametrize("dtype", ALL)
def test_cast_storage_matches_the_cpu(dtype):
    x = data((300, 40), dtype)
    x[7] = 0
    for stype in ("csr", "row_sparse"):
        on_cpu = nd.array(x, ctx=cpu(0), dtype=dtype).tostype(stype)
        on_gpu = nd.array(x, ctx=gpu(0), dtype=dtype).tostype(stype)
        assert on_gpu.context == gpu(0) and on_gpu.stype == stype
        np.testing.assert_array_equal(on_gpu.indices.asnumpy(), on_cpu.indices.asnumpy())
        np.testing.assert_array_equal(on_gpu.data.asnumpy(), on_cpu.data.asnumpy())
        if stype == "csr":
            np.testing.assert_array_equal(on_gpu.indptr.asnumpy(), on_cpu.indptr.asnumpy())
        back = on_gpu.tostype("default")
        assert back.context == gpu(0)
        np.testing.assert_array_equal(back.asnumpy(), x)
        on_gpu.check_format()


def test_binary_and_unary_ops_on_gpu():
    a, b = data((50, 8), "float32", 1), data((50, 8), "float32", 2)
    ra, rb = (sparse.row_sparse_array(v, ctx=gpu(0)) for v in (a, b))
    s = nd.elemwise_add(ra, rb)
    assert s.stype == "row_sparse" and s.context == gpu(0)
    np.testing.assert_array_equal(s.asnumpy(), a + b)
    np.testing.assert_array_equal(nd.elemwise_sub(ra, rb).asnumpy(), a - b)
    ca, cb = (sparse.csr_matrix(v, ctx=gpu(0)) for v in (a, b))
    c = nd.elemwise_add(ca, cb)                 # fallback on a GPU, cast back to csr
    assert c.stype == "csr"
    np.testing.assert_array_equal(c.asnumpy(), a + b)
    q = nd.square(ca)
    assert q.stype == "csr"
    np.testing.assert_array_equal(q.asnumpy(), a * a)


def test_copies_across_devices():
    x = data((20, 6), "float32", 3)
    c = sparse.csr_matrix(x)
    g = c.copyto(gpu(0))
    assert g.context == gpu(0) and g.stype == "csr"
    back = g.as_in_context(cpu(0))
    np.testing.assert_array_equal(back.asnumpy(), x)
    assert (back.asscipy() != c.asscipy()).nnz == 0


def test_malformed_input_is_an_error_not_a_fault():
    bad = sparse.csr_matrix((np.ones(2, "float32"), [0, 99], [0, 1, 2]), shape=(2, 3),
                            ctx=gpu(0))
    with pytest.raises(MXNetError, match="malformed csr input"):
        bad.tostype("default").asnumpy()
