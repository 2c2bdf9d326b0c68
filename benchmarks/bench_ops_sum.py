"""add_n, the gradient pass's sum of several contributions, through
mx_ops.invoke (no engine) and mx.nd (the engine), against its NumPy floor
``a + b + c + d``: NumPy's chain of binary adds, which makes a temporary
per add, where add_n reads each input once and writes the output once."""
import numpy as np

import mx_ndarray as nd
from mx_ops import invoke


class AddN:
    """The sum of 4 float32 arrays of 1M elements (4 MB each)."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.xs = [rng.standard_normal(1 << 20, dtype=np.float32) for _ in range(4)]
        self.out = np.empty(1 << 20, np.float32)
        self.nds = [nd.array(x) for x in self.xs]
        self.nd_out = nd.empty((1 << 20,))

    def time_add_n(self):
        invoke("add_n", self.xs, out=self.out)

    def time_add_n_nd(self):
        nd.add_n(*self.nds, out=self.nd_out).wait_to_read()

    def time_numpy_floor(self):
        a, b, c, d = self.xs
        a + b + c + d
