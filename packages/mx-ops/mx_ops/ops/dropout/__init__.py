"""The dropout family: Dropout."""
from mx_ops.ops.dropout import dropout  # noqa: F401  (registers, in this order)
