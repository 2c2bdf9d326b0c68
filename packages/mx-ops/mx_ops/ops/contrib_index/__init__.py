"""The contrib_index family: MXNet's contrib index_copy (with its backward),
index_array and boolean_mask (a dynamic-shape operator, computed by mx-ndarray)."""
from mx_ops.ops.contrib_index import contrib_index  # noqa: F401  (registers, gradients)
