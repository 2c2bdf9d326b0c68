"""The index family: take, one_hot, pick (choose_element_0index),
batch_take and fill_element_0index."""
from mx_ops.ops.index import index  # noqa: F401  (registers, in this order)
from mx_ops.ops.index import pick  # noqa: F401
