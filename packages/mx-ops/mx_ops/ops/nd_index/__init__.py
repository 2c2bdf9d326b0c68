"""The nd_index family: gather_nd, scatter_nd and _scatter_set_nd."""
from mx_ops.ops.nd_index import nd_index  # noqa: F401  (registers, in this order)
