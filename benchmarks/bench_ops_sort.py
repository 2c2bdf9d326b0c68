"""sort, argsort, topk, take and pick through mx_ops.invoke (no engine),
against the NumPy composition that computes the same thing
(benchmarks/compare_sort.py puts PyTorch beside them)."""
import numpy as np

from mx_ops import invoke


class Ordering:
    """float32 1000 x 1000, along the last axis."""

    def setup(self):
        self.x = np.random.default_rng(0).standard_normal((1000, 1000), dtype=np.float32)

    def time_sort(self):
        invoke("sort", [self.x])

    def time_argsort(self):
        invoke("argsort", [self.x], dtype="int64")

    def time_topk_10(self):
        invoke("topk", [self.x], k=10, ret_typ="both", dtype="int64")

    def time_numpy_sort(self):
        np.sort(self.x, axis=-1)

    def time_numpy_argsort(self):
        np.argsort(self.x, axis=-1)

    def time_numpy_topk_10(self):
        part = np.argpartition(-self.x, 9, axis=-1)[:, :10]
        vals = np.take_along_axis(self.x, part, -1)
        np.argsort(-vals, axis=-1, kind="stable")


class Picking:
    """take of 100000 rows of 64 and of 1e6 single elements; pick of one in each
    of 100000 rows of 100."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.tab = rng.standard_normal((100000, 64), dtype=np.float32)
        self.tidx = rng.integers(0, 100000, 100000)
        self.p = rng.standard_normal((100000, 100), dtype=np.float32)
        self.pidx = rng.integers(0, 100, 100000)
        self.vec = rng.standard_normal(1000000, dtype=np.float32)
        self.vidx = rng.integers(0, 1000000, 1000000)

    def time_take(self):
        invoke("take", [self.tab, self.tidx])

    def time_take_1d(self):
        invoke("take", [self.vec, self.vidx])

    def time_pick(self):
        invoke("pick", [self.p, self.pidx])

    def time_numpy_take(self):
        np.take(self.tab, self.tidx, axis=0)

    def time_numpy_take_1d(self):
        np.take(self.vec, self.vidx)

    def time_numpy_pick(self):
        np.take_along_axis(self.p, self.pidx[:, None], -1)
