"""The spatial family: GridGenerator and BilinearSampler (MXNet's spatial
transformer pieces) with their backwards."""
from mx_ops.ops.spatial import grid_generator  # noqa: F401  (registers, gradient)
from mx_ops.ops.spatial import bilinear_sampler  # noqa: F401  (registers, gradient)
