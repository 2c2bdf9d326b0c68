"""The join family: Concat and SliceChannel (split)."""
from mx_ops.ops.join import join  # noqa: F401  (registers, in this order)
