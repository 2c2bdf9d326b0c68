"""``mx.ndarray.random``: random distribution generators (mx_ndarray.random)."""
from mx.base import numeric_types  # noqa: F401  (MXNet's module has these three)
from mx_engine import current_context  # noqa: F401
from mx_ndarray import NDArray  # noqa: F401
from mx_ndarray.random import *  # noqa: F401,F403
from mx_ndarray.random import __all__  # noqa: F401
from mx_ndarray.random import (exponential_like, gamma_like,  # noqa: F401  (not in __all__,
                               generalized_negative_binomial_like, negative_binomial_like,
                               normal_like, poisson_like, uniform_like)  # as MXNet's)
