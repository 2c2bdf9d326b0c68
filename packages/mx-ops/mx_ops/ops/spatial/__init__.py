"""The spatial family: GridGenerator, BilinearSampler and SpatialTransformer
(the two in one) with their backwards."""
from mx_ops.ops.spatial import grid_generator  # noqa: F401  (registers, gradient)
from mx_ops.ops.spatial import bilinear_sampler  # noqa: F401  (registers, gradient)
from mx_ops.ops.spatial import spatial_transformer  # noqa: F401  (registers, gradient)
