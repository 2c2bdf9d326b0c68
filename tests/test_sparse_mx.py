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
