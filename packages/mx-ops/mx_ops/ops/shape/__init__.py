"""The shape family: Reshape, Flatten, expand_dims, transpose, slice,
slice_axis, broadcast_to, shape_array, size_array; gradients in grad.py,
partial inference in infer.py."""
from mx_ops.ops.shape import shape, grad, infer  # noqa: F401  (registers, in this order)
