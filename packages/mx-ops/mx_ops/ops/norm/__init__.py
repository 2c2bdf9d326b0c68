"""The norm family: BatchNorm and BatchNorm_v1 (one kernel), LRN (written
in the OperatorProperty style), LayerNorm, GroupNorm and InstanceNorm (one
row-normalization kernel), and moments."""
# (registers, in this order)
from mx_ops.ops.norm import batch_norm, batch_norm_v1, lrn, moments, row_norm  # noqa: F401
