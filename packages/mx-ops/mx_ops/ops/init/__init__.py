"""The init family: _full, _zeros, _ones, _arange, zeros_like, ones_like and
Cast."""
from mx_ops.ops.init import init  # noqa: F401  (registers, in this order)
