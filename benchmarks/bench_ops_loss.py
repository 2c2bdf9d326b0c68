"""softmax_cross_entropy's CPU kernels through mx_ops.invoke (no engine),
float32, forward and backward, on a classifier's logits.  Side-by-side
ratios against NumPy and PyTorch's cross_entropy come from
``benchmarks/compare_loss.py``."""
import numpy as np

from mx_ops import invoke

SHAPES = {"small": (64, 10), "imagenet": (1024, 1000)}


class SoftmaxCrossEntropy:
    params = [list(SHAPES)]
    param_names = ["shape"]

    def setup(self, shape):
        rows, classes = SHAPES[shape]
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((rows, classes), np.float32)
        self.label = rng.integers(0, classes, rows).astype(np.float32)
        self.out = np.empty(1, np.float32)
        self.og = np.ones(1, np.float32)
        self.grads = [np.empty_like(self.x), np.empty_like(self.label)]

    def time_forward(self, shape):
        invoke("softmax_cross_entropy", [self.x, self.label], out=self.out)

    def time_backward(self, shape):
        invoke("_backward_softmax_cross_entropy", [self.og, self.x, self.label], out=self.grads)


class CTCLoss:
    """CTCLoss's kernel on activations (T=50, N=32, alphabet 30), 20 labels
    a sequence: the loss alone (req 'null' for the hidden gradient, what an
    unrecorded NDArray call runs) and the loss with its gradient.  Side by
    side with PyTorch: ``benchmarks/compare_ctc.py``."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((50, 32, 30), np.float32)
        self.label = rng.integers(1, 30, (32, 20)).astype(np.float32)
        self.outs = [np.empty(32, np.float32), np.empty_like(self.x)]

    def time_loss_alone(self):
        invoke("CTCLoss", [self.x, self.label], out=self.outs, req=["write", "null"])

    def time_loss_and_gradient(self):
        invoke("CTCLoss", [self.x, self.label], out=self.outs)
