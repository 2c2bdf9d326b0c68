"""The layout family: Pad, SwapAxis, broadcast_axis, depth_to_space,
space_to_depth, repeat, tile, reverse and slice_like (table gathers and
their scatter-add gradients, layout.py), squeeze, stack and _split_v2 over
the copy and join kernels (stack.py), contrib arange_like (arange_like.py),
im2col and col2im (im2col.py)."""
from mx_ops.ops.layout import arange_like, im2col, layout, stack  # noqa: F401  (registers)
