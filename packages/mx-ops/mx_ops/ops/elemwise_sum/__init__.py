"""The elemwise_sum family: add_n (ElementWiseSum)."""
from mx_ops.ops.elemwise_sum import elemwise_sum  # noqa: F401  (registers, in this order)
