"""The sparse optimizer updates under MXNet's names in ``mx.nd.sparse``
(adagrad_update is the registry's _sparse_adagrad_update), called the way
MXNet 1.9.1's optimizers call them; the numbers are checked against a
NumPy computation (packages/mx-ndarray/tests/test_sparse_optimizer.py has
the MXNet 1.9.1 references)."""
import numpy as np

import mx


def test_adagrad_update_through_mx_nd_sparse():
    w = mx.nd.ones((4, 2)).tostype("row_sparse")
    h = mx.nd.sparse.zeros("row_sparse", (4, 2))
    g = mx.nd.sparse.row_sparse_array((np.full((1, 2), 2.0, np.float32), [1]), shape=(4, 2))
    mx.nd.sparse.adagrad_update(w, g, h, out=w, lr=1.0, epsilon=5.0)
    assert w.stype == "row_sparse" and h.stype == "row_sparse"
    want = np.ones((4, 2), np.float32)
    want[1] = 1 - 2 / np.sqrt(4 + 5)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(h.asnumpy()[1], [4, 4])


def test_sgd_mom_update_through_mx_nd_sparse():
    w, mom = mx.nd.ones((5, 3)), mx.nd.zeros((5, 3))
    g = mx.nd.sparse.row_sparse_array((np.ones((2, 3), np.float32), [0, 3]), shape=(5, 3))
    mx.nd.sparse.sgd_mom_update(w, g, mom, out=w, lr=0.5, momentum=0.9, wd=0.1,
                                lazy_update=True)
    want = np.ones((5, 3), np.float32)
    want[[0, 3]] += -0.5 * 0.1 - 0.5
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
