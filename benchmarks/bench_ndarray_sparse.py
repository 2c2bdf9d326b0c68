"""Sparse storage through mx.nd (pushed and waited for): cast_storage both
ways and elemwise_add on csr, against scipy.sparse doing the same
(benchmarks/compare_sparse.py puts MXNet 1.9.1 beside them)."""
import numpy as np
import scipy.sparse as spsp

import mx_ndarray as nd


class CastStorage:
    """float32 4000 x 2000 with 1% nonzeros."""

    def setup(self):
        rng = np.random.default_rng(0)
        x = rng.standard_normal((4000, 2000), dtype=np.float32)
        x[rng.random(x.shape) >= 0.01] = 0
        self.host = x
        self.x = nd.array(x)
        self.csr = self.x.tostype("csr")
        self.scipy = spsp.csr_matrix(x)

    def time_dense_to_csr(self):
        nd.cast_storage(self.x, stype="csr").wait_to_read()

    def time_csr_to_dense(self):
        nd.cast_storage(self.csr, stype="default").wait_to_read()

    def time_dense_to_row_sparse(self):
        nd.cast_storage(self.x, stype="row_sparse").wait_to_read()

    def time_csr_add(self):
        nd.elemwise_add(self.csr, self.csr).wait_to_read()

    def time_scipy_dense_to_csr(self):
        spsp.csr_matrix(self.host)

    def time_scipy_csr_to_dense(self):
        self.scipy.toarray()

    def time_scipy_csr_add(self):
        self.scipy + self.scipy
