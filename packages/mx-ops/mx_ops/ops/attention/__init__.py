"""The attention family: MXNet's interleaved multi-head attention matmuls."""
from mx_ops.ops.attention import attention  # noqa: F401  (registers)
