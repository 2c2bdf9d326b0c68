"""Sparse arrays through ``import mx`` (mx.nd.sparse, mx.autograd with the
graph package's Gradient pass): what needs more than mx-ndarray."""
import numpy as np
import pytest

import mx


def test_cast_storage_dense_to_dense_is_recorded():
    """cast_storage always takes the storage dispatch (it may give sparse
    outputs from dense inputs); dense to dense it is the dense call,
    recorded, with the head gradient passed through."""
    a = np.arange(6, dtype="float32").reshape(2, 3)
    x = mx.nd.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.cast_storage(x, stype="default") * 3
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full(a.shape, 3, "float32"))


def test_mx_nd_sparse_namespace():
    c = mx.nd.sparse.csr_matrix(np.eye(3, dtype="float32"))
    assert isinstance(c, mx.nd.sparse.CSRNDArray) and isinstance(c, mx.nd.NDArray)
    assert mx.nd.sparse.abs(c * -1).stype == "csr"
    assert mx.nd.sparse.retain(mx.nd.sparse.row_sparse_array(np.eye(3, dtype="float32")),
                               mx.nd.array([1], dtype="int64")).indices.asnumpy().tolist() == [1]
    with pytest.raises(mx.base.MXNetError, match="not supported for SparseNDArray"):
        c.reshape((9,))


def test_mx_nd_sparse_operators_and_symbols():
    a = np.array([[0, 2, 0], [0, 0, 0], [3, 0, 4]], dtype="float32")
    c = mx.nd.sparse.csr_matrix(a)
    r = mx.nd.sparse.row_sparse_array(a)
    row = mx.nd.array([[1, 2, 4]])
    cases = [
        (mx.nd.sparse.elemwise_mul(c, mx.nd.array(a)), "csr", a * a),
        (mx.nd.sparse.multiply(r, r), "row_sparse", a * a),
        (mx.nd.sparse.broadcast_mul(c, row), "csr", a * row.asnumpy()),
        (mx.nd.sparse.broadcast_div(c, row), "csr", a / row.asnumpy()),
        (mx.nd.sparse.broadcast_plus(c, row), "default", a + row.asnumpy()),
        (mx.nd.sparse.add_n(r, r, r), "row_sparse", 3 * a),
        (mx.nd.sparse.ElementWiseSum(r, r), "row_sparse", 2 * a),
        (mx.nd.sparse.slice(c, begin=(1,), end=(3,)), "csr", a[1:3]),
        (mx.nd.sparse.where(c, mx.nd.ones((3, 3)), mx.nd.zeros((3, 3))), "default",
         (a != 0).astype("float32")),
        (mx.nd.sparse.sum(c, axis=0), "default", a.sum(axis=0)),
        (mx.nd.sparse.mean(c, axis=1), "default", a.mean(axis=1)),
        (mx.nd.sparse.norm(r), "default", np.linalg.norm(a).reshape(1)),
        (mx.nd.sparse.zeros_like(c), "csr", np.zeros_like(a)),
        (mx.nd.sparse.clip(r, -1, 2.5), "row_sparse", np.clip(a, -1, 2.5)),
        (mx.nd.sparse.retain(r, mx.nd.array([2], dtype="int64")), "row_sparse",
         a * np.array([[0], [0], [1]], "float32")),
    ]
    for got, stype, want in cases:
        assert got.stype == stype
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    for name in ("elemwise_mul", "broadcast_mul", "add_n", "slice", "where", "norm", "sum",
                 "mean", "zeros_like", "clip", "_sparse_retain"):
        assert callable(getattr(mx.sym, name, None) or getattr(mx.sym._internal, name))


def test_create_sparse_array_as_mxnet():
    rsp = mx.test_utils.create_sparse_array((6, 3), "row_sparse", rsp_indices=[4, 1],
                                            data_init=2.0)
    assert rsp.stype == "row_sparse"
    assert rsp.indices.asnumpy().tolist() == [1, 4]          # sorted, as MXNet's
    np.testing.assert_array_equal(rsp.asnumpy()[[1, 4]], np.full((2, 3), 2.0))
    csr = mx.test_utils.create_sparse_array((5, 4), "csr", density=1.0)
    assert csr.stype == "csr" and csr.indices.shape == (20,)
    zd = mx.test_utils.create_sparse_array_zd((6, 3), "row_sparse", density=0.9)
    assert zd.indices.shape == (0,)                       # only rsp_indices count
    zd = mx.test_utils.create_sparse_array_zd((6, 3), "row_sparse", 0.9, rsp_indices=[5])
    assert zd.indices.asnumpy().tolist() == [5]
    with pytest.raises(ValueError, match="7 rsp_indices for 6 rows"):
        mx.test_utils.create_sparse_array_zd((6, 3), "row_sparse", 0, rsp_indices=range(7))
    with pytest.raises(AssertionError, match="Unknown storage type: coo"):
        mx.test_utils.create_sparse_array((2, 2), "coo")
