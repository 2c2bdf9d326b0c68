"""The norm family: BatchNorm and LRN (written in the OperatorProperty
style), LayerNorm, GroupNorm and InstanceNorm (one row-normalization
kernel), and moments."""
from mx_ops.ops.norm import batch_norm, lrn, moments, row_norm  # noqa: F401  (registers, in this order)
