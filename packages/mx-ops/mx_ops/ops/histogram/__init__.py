"""The histogram family: _histogram (mx.nd.histogram's operator)."""
from mx_ops.ops.histogram import histogram  # noqa: F401  (registers)
