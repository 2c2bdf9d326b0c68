"""NDArray operators on the engine: per-op overhead, a bandwidth-bound add,
reductions, dot, indexing, and a chain of prepared calls (an executor's
pass) against the same chain of mx.nd calls.  Each timed call ends with a wait, so the
time is the operator's, not the push's.  Side-by-side ratios against NumPy
and MXNet 1.9.1 come from ``benchmarks/compare_ndarray.py``."""
import numpy as np

import mx_ndarray as nd
from mx_ndarray import PreparedCall, push_all


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


class PreparedChain:
    """A bound executor's pass: a chain of n small ops (relu, negative,
    elemwise_add on shape (16,)) pushed as prepared calls in one push_all,
    against the same chain through mx.nd calls, into new arrays and into
    the same arrays as the prepared calls; one wait at the end.  Divide by
    n for the cost per op."""
    params = [[50, 500]]
    param_names = ["n"]
    _CHAIN = (("relu", 1), ("negative", 1), ("elemwise_add", 2))

    def setup(self, n):
        self.x = nd.ones((16,))
        self.bufs = [nd.empty((16,)) for _ in range(n)]
        self.steps = [(getattr(nd, name), nin)
                      for name, nin in (self._CHAIN[i % 3] for i in range(n))]
        self.calls = []
        src = self.x
        for i, (name, nin) in enumerate(self._CHAIN[i % 3] for i in range(n)):
            self.calls.append(PreparedCall(name, {}, [src] * nin, [self.bufs[i]], ["write"]))
            src = self.bufs[i]
        push_all(self.calls)            # first touch of every buffer
        self.bufs[-1].wait_to_read()

    def time_push_all(self, n):
        push_all(self.calls)
        self.bufs[-1].wait_to_read()

    def time_nd_calls(self, n):
        y = self.x
        for fn, nin in self.steps:
            y = fn(y) if nin == 1 else fn(y, y)
        y.wait_to_read()

    def time_nd_calls_out(self, n):
        y = self.x
        for (fn, nin), out in zip(self.steps, self.bufs):
            y = fn(y, out=out) if nin == 1 else fn(y, y, out=out)
        y.wait_to_read()
