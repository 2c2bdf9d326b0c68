"""The vision family: ROIPooling and _contrib_ROIAlign (region-of-interest
pooling), _contrib_BilinearResize2D and _contrib_AdaptiveAvgPooling2D, with
their backwards."""
from mx_ops.ops.vision import roi_pooling  # noqa: F401  (registers, gradient, inference)
from mx_ops.ops.vision import roi_align  # noqa: F401  (registers, gradient, inference)
from mx_ops.ops.vision import bilinear_resize  # noqa: F401  (registers, gradient, inference)
from mx_ops.ops.vision import adaptive_pool  # noqa: F401  (registers, gradient, inference)
