"""The dot family: dot and batch_dot."""
from mx_ops.ops.dot import dot  # noqa: F401  (registers, in this order)
