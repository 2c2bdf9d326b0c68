"""The loss family: SoftmaxOutput, the regression outputs, MakeLoss,
make_loss, BlockGrad, softmax_cross_entropy (gradients in grad.py, partial
inference in infer.py), smooth_l1 (written in the SimpleOp style) and
SVMOutput and CTCLoss (one module each)."""
# Registers, in this order: the OpDefs, then their gradients and partial inference.
from mx_ops.ops.loss import (loss, softmax_output, softmax_ce, smooth_l1,  # noqa: F401
                             svm_output, ctc, grad, infer)
