"""The index family: take, one_hot, pick (choose_element_0index),
batch_take, fill_element_0index, _ravel_multi_index and _unravel_index."""
from mx_ops.ops.index import index  # noqa: F401  (registers, in this order)
from mx_ops.ops.index import pick  # noqa: F401
from mx_ops.ops.index import ravel  # noqa: F401
