"""The loss family: SoftmaxOutput, the regression outputs, MakeLoss,
make_loss, BlockGrad (gradients in grad.py, partial inference in
infer.py) and smooth_l1 (written in the SimpleOp style)."""
# Registers, in this order: the OpDefs, then their gradients and partial inference.
from mx_ops.ops.loss import loss, softmax_output, smooth_l1, grad, infer  # noqa: F401
