"""``mx.ndarray.random``: random distribution generators (mx_ndarray.random)."""
from mx_ndarray.random import *  # noqa: F401,F403
from mx_ndarray.random import __all__  # noqa: F401
