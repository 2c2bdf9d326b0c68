"""The random family: the random samplers (_random_uniform, _random_normal,
...) and _shuffle."""
from mx_ops.ops.random import random  # noqa: F401  (registers, in this order)
