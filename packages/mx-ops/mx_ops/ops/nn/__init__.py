"""The nn family: Activation, LeakyReLU, softmax, log_softmax,
FullyConnected, Convolution, Deconvolution, Pooling; gradients in grad.py,
partial shape inference in infer.py."""
# Registers, in this order: the OpDefs, then their gradients and partial inference.
from mx_ops.ops.nn import activation, fully_connected, convolution, pooling, grad, infer  # noqa: F401
