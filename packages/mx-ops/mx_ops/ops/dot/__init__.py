"""The dot family: dot and batch_dot, and dot's sparse kernels and storage
rules with _backward_dot (dot_sparse)."""
from mx_ops.ops.dot import dot  # noqa: F401  (registers, in this order)
from mx_ops.ops.dot import dot_sparse  # noqa: F401
