"""The NN operators' CPU kernels through mx_ops.invoke (no engine), float32:
Convolution forward and backward (LeNet- and ResNet-block-sized, and
compare_conv3d.py's 3-D layer),
FullyConnected forward and backward, softmax.  Side-by-side ratios against
the NumPy floors and PyTorch come from ``benchmarks/compare_conv.py`` and
``benchmarks/compare_nn.py``."""
import numpy as np

from mx_ops import invoke

LAYERS = {  # data shape, num_filter, kernel, pad
    "lenet": ((64, 1, 28, 28), 20, (5, 5), (0, 0)),
    "resnet": ((32, 64, 56, 56), 64, (3, 3), (1, 1)),
    "3d": ((8, 16, 16, 32, 32), 32, (3, 3, 3), (1, 1, 1)),
}


class Convolution:
    params = [list(LAYERS)]
    param_names = ["layer"]

    def setup(self, layer):
        shape, nf, k, pad = LAYERS[layer]
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal(shape, np.float32)
        self.w = rng.standard_normal((nf, shape[1]) + k, np.float32)
        self.b = rng.standard_normal(nf, np.float32)
        self.kw = dict(num_filter=nf, kernel=k, pad=pad)
        self.y = invoke("Convolution", [self.x, self.w, self.b], **self.kw)
        self.grads = [np.empty_like(self.x), np.empty_like(self.w), np.empty_like(self.b)]

    def time_forward(self, layer):
        invoke("Convolution", [self.x, self.w, self.b], out=self.y, **self.kw)

    def time_backward(self, layer):
        invoke("_backward_Convolution", [self.y, self.x, self.w], out=self.grads, **self.kw)


class FullyConnected:
    """out = x . w^T + b: a skinny batch (the weight read in place) and a
    square one (packed GEMM)."""
    params = [[64, 1024]]
    param_names = ["batch"]

    def setup(self, batch):
        rng = np.random.default_rng(1)
        self.x = rng.standard_normal((batch, 1024), dtype=np.float32)
        self.w = rng.standard_normal((1024, 1024), dtype=np.float32)
        self.b = rng.standard_normal(1024, dtype=np.float32)
        self.y = np.empty((batch, 1024), np.float32)
        self.grads = [np.empty_like(self.x), np.empty_like(self.w), np.empty_like(self.b)]

    def time_forward(self, batch):
        invoke("FullyConnected", [self.x, self.w, self.b], out=self.y, num_hidden=1024)

    def time_backward(self, batch):
        invoke("_backward_FullyConnected", [self.y, self.x, self.w], out=self.grads,
               num_hidden=1024)


class Softmax:
    """softmax over the last axis (contiguous rows) and over axis 1 of an
    NCHW-like array (256-row lane blocks)."""
    params = [["last", "channels"]]
    param_names = ["axis"]

    def setup(self, axis):
        rng = np.random.default_rng(2)
        shape = (256, 4096) if axis == "last" else (16, 64, 32, 32)
        self.axis = -1 if axis == "last" else 1
        self.x = rng.standard_normal(shape, dtype=np.float32)
        self.y = np.empty_like(self.x)

    def time_softmax(self, axis):
        invoke("softmax", [self.x], out=self.y, axis=self.axis)

    def time_log_softmax(self, axis):
        invoke("log_softmax", [self.x], out=self.y, axis=self.axis)
