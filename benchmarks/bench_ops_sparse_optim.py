"""Optimizer updates of an embedding table with a row_sparse gradient
through mx.nd (pushed and waited for): the lazy step (only the gradient's
rows), the standard step and the dense step of the same table
(benchmarks/compare_sparse_optim.py puts MXNet 1.9.1 beside them)."""
import numpy as np

import mx_ndarray as nd
from mx_ndarray import sparse

from .common import SEED


class SparseSGD:
    """A 10^6 x 64 float32 table, the gradient on 1% of its rows."""
    params = [["sgd_update", "sgd_mom_update"]]
    param_names = ["op"]
    timeout = 300

    def setup(self, op):
        rows, width = 10**6, 64
        rng = np.random.default_rng(SEED)
        touched = np.sort(rng.choice(rows, rows // 100, replace=False))
        data = rng.standard_normal((touched.size, width), dtype=np.float32)
        self.w = nd.array(rng.standard_normal((rows, width), dtype=np.float32))
        self.states = [nd.zeros((rows, width))] if op == "sgd_mom_update" else []
        self.g = sparse.row_sparse_array((data, touched), shape=(rows, width))
        self.dense_g = self.g.tostype("default")
        self.fn = getattr(nd, op)
        self.kw = {"momentum": 0.9} if op == "sgd_mom_update" else {}
        nd.waitall()

    def _step(self, grad, **kw):
        self.fn(self.w, grad, *self.states, lr=0.01, out=self.w, **self.kw, **kw)
        self.w.wait_to_read()

    def time_lazy(self, op):
        self._step(self.g, lazy_update=True)

    def time_standard(self, op):
        self._step(self.g, lazy_update=False)

    def time_dense(self, op):
        self._step(self.dense_g)
