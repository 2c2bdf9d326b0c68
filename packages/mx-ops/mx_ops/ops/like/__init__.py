"""The like family: the operators whose output takes its shape (or dtype)
from another input (reshape_like, broadcast_like, _collapse_sum_like, ...)."""
from mx_ops.ops.like import like  # noqa: F401  (registers, in this order)
