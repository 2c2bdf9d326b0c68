"""The assign family: _slice_assign, _slice_assign_scalar and the slices'
backward ops (_backward_slice, _backward_slice_axis)."""
from mx_ops.ops.assign import assign  # noqa: F401  (registers, in this order)
