"""The norm family: BatchNorm and LRN (written in the OperatorProperty
style)."""
from mx_ops.ops.norm import batch_norm, lrn  # noqa: F401  (registers, in this order)
