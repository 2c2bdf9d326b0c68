"""The layer family: Embedding, UpSampling and L2Normalization, whose CPU
kernels share one module (_layer_cpu)."""
# Registers, in this order: the OpDefs, then their gradients and partial inference.
from mx_ops.ops.layer import embedding, upsampling, l2_normalization  # noqa: F401
