"""The diag family: diag (a matrix from a vector, or diagonals of an array)
and its backward."""
from mx_ops.ops.diag import diag  # noqa: F401  (registers, gradient)
