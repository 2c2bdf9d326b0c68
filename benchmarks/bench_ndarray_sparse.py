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


class SparseDot:
    """dot(csr, dense) and dot(csr.T, dense) through mx.nd: a 10^5 x 10^4
    csr with 100 entries per row (issue 16's case), times 64 columns,
    against scipy.sparse (benchmarks/compare_sparse_dot.py adds MXNet)."""

    def setup(self):
        rng = np.random.default_rng(0)
        rows, cols, per_row, width = 100_000, 10_000, 100, 64
        band = cols // per_row
        indices = (rng.integers(0, band, (rows, per_row)) + np.arange(per_row) * band).ravel()
        indptr = np.arange(rows + 1, dtype=np.int64) * per_row
        data = rng.standard_normal(rows * per_row, dtype=np.float32)
        w = rng.standard_normal((cols, width), dtype=np.float32)
        g = rng.standard_normal((rows, width), dtype=np.float32)
        self.scipy = spsp.csr_matrix((data, indices, indptr), shape=(rows, cols))
        self.w_host, self.g_host = w, g
        self.csr = nd.sparse.csr_matrix((data, indices, indptr), shape=(rows, cols))
        self.w, self.g = nd.array(w), nd.array(g)

    def time_csr_dense(self):
        nd.dot(self.csr, self.w).wait_to_read()

    def time_csr_t_dense(self):
        nd.dot(self.csr, self.g, transpose_a=True).wait_to_read()

    def time_scipy_csr_dense(self):
        self.scipy @ self.w_host

    def time_scipy_csr_t_dense(self):
        self.scipy.T @ self.g_host


class SparseOperators:
    """The sparse operators' kernels: a 20000 x 2000 csr with 1% nonzeros
    times a dense row vector (broadcast_mul) and times a dense matrix
    (elemwise_mul), and add_n of four 200000 x 64 row_sparse arrays with 1%
    of the rows each."""

    def setup(self):
        rng = np.random.default_rng(0)
        rows, cols, per_row = 20000, 2000, 20
        indices = (np.arange(per_row) * 100 + rng.integers(0, 100, (rows, per_row))).ravel()
        indptr = np.arange(rows + 1) * per_row
        data = rng.standard_normal(rows * per_row, dtype=np.float32)
        self.csr = nd.sparse.csr_matrix((data, indices, indptr), shape=(rows, cols))
        self.scipy = spsp.csr_matrix((data, indices, indptr), shape=(rows, cols))
        self.row_host = rng.standard_normal((1, cols), dtype=np.float32)
        self.row = nd.array(self.row_host)
        self.dense = nd.array(rng.standard_normal((rows, cols), dtype=np.float32))
        self.rsp = []
        for _ in range(4):
            kept = np.sort(rng.choice(200000, 2000, replace=False))
            self.rsp.append(nd.sparse.row_sparse_array(
                (rng.standard_normal((2000, 64), dtype=np.float32), kept), shape=(200000, 64)))
        nd.waitall()

    def time_broadcast_mul_row(self):
        nd.broadcast_mul(self.csr, self.row).wait_to_read()

    def time_elemwise_mul_dense(self):
        nd.elemwise_mul(self.csr, self.dense).wait_to_read()

    def time_add_n_row_sparse(self):
        nd.add_n(*self.rsp).wait_to_read()

    def time_scipy_multiply_row(self):
        self.scipy.multiply(self.row_host).tocsr()
