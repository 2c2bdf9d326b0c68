"""The contrib_index family: MXNet's contrib index_copy (with its backward)
and index_array."""
from mx_ops.ops.contrib_index import contrib_index  # noqa: F401  (registers, gradients)
