"""The random family: the random samplers (_random_uniform, _random_normal,
_random_gamma, ...), their _like and per-element _sample_ forms,
_sample_multinomial and _shuffle."""
from mx_ops.ops.random import random  # noqa: F401  (registers, in this order)
from mx_ops.ops.random import distributions  # noqa: F401
