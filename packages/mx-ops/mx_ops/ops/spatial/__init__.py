"""The spatial family: GridGenerator, BilinearSampler, SpatialTransformer
(the two in one) and Correlation, with their backwards."""
from mx_ops.ops.spatial import grid_generator  # noqa: F401  (registers, gradient)
from mx_ops.ops.spatial import bilinear_sampler  # noqa: F401  (registers, gradient)
from mx_ops.ops.spatial import spatial_transformer  # noqa: F401  (registers, gradient)
from mx_ops.ops.spatial import correlation  # noqa: F401  (registers, gradient)
