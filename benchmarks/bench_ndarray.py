"""NDArray operators on the engine: per-op overhead, a bandwidth-bound add,
reductions, dot, and indexing.  Each timed call ends with a wait, so the
time is the operator's, not the push's.  Side-by-side ratios against NumPy
and MXNet 1.9.1 come from ``benchmarks/compare_ndarray.py``."""
import numpy as np

import mx_ndarray as nd


class SmallOpOverhead:
    """``c = a + b`` on shape (1,), n times, then one wait."""

    def setup(self):
        self.a, self.b = nd.ones((1,)), nd.ones((1,))
        self.n = 10_000

    def time_add_chain(self):
        a, b = self.a, self.b
        for _ in range(self.n):
            c = a + b
        c.wait_to_read()


class Elementwise:
    """x + y over float32 arrays (the large ones are split across cores)."""
    params = [[100_000, 10_000_000]]
    param_names = ["size"]

    def setup(self, size):
        self.x, self.y = nd.ones((size,)), nd.ones((size,))
        self.out = nd.empty((size,))

    def time_add_into(self, size):
        nd.elemwise_add(self.x, self.y, out=self.out).wait_to_read()

    def time_add_new(self, size):
        (self.x + self.y).wait_to_read()


class Reduce:
    """sum over one axis of a square float32 matrix."""
    params = [[512, 4096], [0, 1]]
    param_names = ["n", "axis"]

    def setup(self, n, axis):
        self.m = nd.array(np.random.default_rng(0).random((n, n), dtype=np.float32))

    def time_sum(self, n, axis):
        nd.sum(self.m, axis=axis).wait_to_read()


class Dot:
    """A square float32 matrix product (GEMM without the GIL)."""
    params = [[128, 1024]]
    param_names = ["n"]

    def setup(self, n):
        self.g = nd.array(np.random.default_rng(1).random((n, n), dtype=np.float32))

    def time_dot(self, n):
        nd.dot(self.g, self.g).wait_to_read()


class Indexing:
    """A strided region read and written (slice / _slice_assign)."""
    params = [[256, 2048]]
    param_names = ["n"]

    def setup(self, n):
        self.m = nd.zeros((n, n))

    def time_get_strided(self, n):
        self.m[:, ::2].wait_to_read()

    def time_set_strided(self, n):
        self.m[:, ::2] = 1.0
        self.m.wait_to_read()
