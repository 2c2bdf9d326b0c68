"""Batched Cholesky (potrf) and inverse through mx_ops.invoke (no engine),
float32: many small matrices (split across workers) and 64 of 256 x 256
(split with scipy's OpenBLAS held at one thread).  Side by side with NumPy
and PyTorch: ``benchmarks/compare_linalg.py``."""
import numpy as np

from mx_ops import invoke

SHAPES = {"4096x32": (4096, 32), "64x256": (64, 256)}


class BatchedLinalg:
    params = [list(SHAPES)]
    param_names = ["shape"]

    def setup(self, shape):
        batch, n = SHAPES[shape]
        a = np.random.default_rng(0).standard_normal((batch, n, n)).astype(np.float32)
        self.spd = a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype=np.float32)
        self.out = np.empty_like(self.spd)

    def time_potrf(self, shape):
        invoke("_linalg_potrf", [self.spd], out=self.out)

    def time_inverse(self, shape):
        invoke("_linalg_inverse", [self.spd], out=self.out)
