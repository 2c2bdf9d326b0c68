"""The index family: take and one_hot."""
from mx_ops.ops.index import index  # noqa: F401  (registers, in this order)
