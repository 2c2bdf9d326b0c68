"""The reduce family: sum, mean, prod, nansum, nanprod, max, min, norm,
argmax, argmin, ...; gradients in grad.py."""
from mx_ops.ops.reduce import reduce, grad  # noqa: F401  (registers, in this order)
