"""BatchNorm (training forward, and forward + backward), Dropout and two
optimizer updates on the CPU.  ``invoke`` runs the kernel now; the ``nd``
variants go through the engine and end by waiting.  Side-by-side ratios
against NumPy (and PyTorch where its venv exists) come from
``benchmarks/compare_nn.py``."""
import numpy as np

import mx_ndarray as nd
from mx_ops import invoke
from mx_ops.core import training

from .common import SEED


class BatchNorm:
    """BatchNorm in training mode on NCHW float32 (a ResNet stage) and on
    channels-last data (axis=-1)."""
    params = [["nchw", "nhwc"]]
    param_names = ["layout"]

    def setup(self, layout):
        rng = np.random.default_rng(SEED)
        shape, self.axis = ((32, 64, 56, 56), 1) if layout == "nchw" else ((32, 56, 56, 64), -1)
        c = shape[self.axis]
        self.x = rng.standard_normal(shape, np.float32)
        self.og = rng.standard_normal(shape, np.float32)
        self.params = [rng.uniform(0.5, 1.5, c).astype(np.float32),
                       rng.standard_normal(c).astype(np.float32),
                       np.zeros(c, np.float32), np.ones(c, np.float32)]
        self.nd_in = [nd.array(a) for a in [self.x] + self.params]

    def _forward(self):
        return invoke("BatchNorm", [self.x] + self.params, axis=self.axis, fix_gamma=False)

    def time_forward(self, layout):
        with training.train_mode():
            self._forward()

    def time_forward_backward(self, layout):
        with training.train_mode():
            y, mean, invstd = self._forward()
            invoke("_backward_BatchNorm", [self.og, mean, invstd, self.x] + self.params,
                   axis=self.axis, fix_gamma=False)

    def time_nd_forward(self, layout):
        with training.train_mode():
            nd.BatchNorm(*self.nd_in, axis=self.axis, fix_gamma=False).wait_to_read()


class Dropout:
    """Dropout p=0.5 in training on 8M float32 elements (one Philox draw each)."""

    def setup(self):
        self.x = np.random.default_rng(SEED).standard_normal((2048, 4096), np.float32)

    def time_forward(self):
        with training.train_mode():
            invoke("Dropout", [self.x], p=0.5)


class OptimizerUpdate:
    """In-place sgd_mom_update and adam_update of 4M float32 weights."""
    params = [["sgd_mom_update", "adam_update"]]
    param_names = ["op"]

    def setup(self, op):
        rng = np.random.default_rng(SEED)
        n = 1 << 22
        self.w = rng.standard_normal(n, np.float32)
        self.g = rng.standard_normal(n, np.float32)
        self.states = [np.zeros(n, np.float32) for _ in range(1 if op == "sgd_mom_update" else 2)]
        self.kw = {"lr": 0.01, "momentum": 0.9} if op == "sgd_mom_update" else {"lr": 0.001}

    def time_update(self, op):
        invoke(op, [self.w, self.g, *self.states], out=self.w, **self.kw)


class LayerNorm:
    """LayerNorm over the last axis, forward (with mean and std) and forward
    + backward, on (32*35, 512) (an LSTM's steps x batch) and (128, 1024)
    float32.  Side-by-side ratios against NumPy and PyTorch come from
    ``benchmarks/compare_norm.py``."""
    params = [["1120x512", "128x1024"]]
    param_names = ["shape"]

    def setup(self, shape):
        rng = np.random.default_rng(SEED)
        rows, cols = map(int, shape.split("x"))
        self.x = rng.standard_normal((rows, cols), np.float32)
        self.og = rng.standard_normal((rows, cols), np.float32)
        self.gamma = rng.uniform(0.5, 1.5, cols).astype(np.float32)
        self.beta = rng.standard_normal(cols).astype(np.float32)
        self.outs = [np.empty_like(self.x), np.empty((rows, 1), np.float32),
                     np.empty((rows, 1), np.float32)]
        self.grads = [np.empty_like(self.x), np.empty_like(self.gamma),
                      np.empty_like(self.beta)]

    def time_forward(self, shape):
        invoke("LayerNorm", [self.x, self.gamma, self.beta], out=self.outs)

    def time_forward_backward(self, shape):
        invoke("LayerNorm", [self.x, self.gamma, self.beta], out=self.outs)
        invoke("_backward_LayerNorm", [self.og, self.x, self.gamma, self.outs[1], self.outs[2]],
               out=self.grads)
