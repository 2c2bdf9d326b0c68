"""The elemwise family: unary math, scalar and binary elementwise operators
(elemwise_* and broadcast_*), their gradients (grad.py) and partial shape
inference (infer.py)."""
from mx_ops.ops.elemwise import elemwise, grad, infer  # noqa: F401  (registers, in this order)
