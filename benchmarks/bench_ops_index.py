"""histogram, diag, eye and linspace through mx_ops.invoke (no engine),
against NumPy (benchmarks/compare_index.py puts PyTorch beside them, and
boolean_mask, an mx.nd.contrib function)."""
import numpy as np

from mx_ops import invoke


class Histogram:
    """1e6 normal float32 values, 100 bins over (-3, 3)."""

    def setup(self):
        self.x = np.random.default_rng(0).standard_normal(1000000, dtype=np.float32)
        self.edges = np.linspace(-3, 3, 101).astype(np.float32)

    def time_uniform(self):
        invoke("_histogram", [self.x], bin_cnt=100, range=(-3.0, 3.0))

    def time_edges(self):
        invoke("_histogram", [self.x, self.edges])

    def time_numpy_uniform(self):
        np.histogram(self.x, 100, (-3, 3))

    def time_numpy_edges(self):
        np.histogram(self.x, self.edges)


class Creation:
    """diag of 2000 x 2000 and of a 2000 vector, eye 2000, linspace 1e6."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.m = rng.standard_normal((2000, 2000), dtype=np.float32)
        self.v = rng.standard_normal(2000, dtype=np.float32)

    def time_diag_extract(self):
        invoke("diag", [self.m])

    def time_diag_make(self):
        invoke("diag", [self.v])

    def time_eye(self):
        invoke("_eye", [], N=2000)

    def time_linspace(self):
        invoke("_linspace", [], start=0, stop=1, num=1000000)

    def time_numpy_diag_extract(self):
        np.diag(self.m).copy()

    def time_numpy_diag_make(self):
        np.diag(self.v)

    def time_numpy_eye(self):
        np.eye(2000, dtype=np.float32)

    def time_numpy_linspace(self):
        np.linspace(0, 1, 1000000).astype(np.float32)
