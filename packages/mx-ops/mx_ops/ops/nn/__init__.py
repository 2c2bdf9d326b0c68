"""The nn family: Activation, LeakyReLU, softmax, log_softmax, softmin,
SoftmaxActivation, FullyConnected, Convolution, Deconvolution, Pooling; gradients in grad.py,
partial shape inference in infer.py; hard_sigmoid (one module)."""
# The OpDefs, then their gradients and partial inference (registers, in this order).
from mx_ops.ops.nn import (activation, convolution, fully_connected, pooling,  # noqa: F401
                           softmax_activation, hard_sigmoid, grad, infer)
