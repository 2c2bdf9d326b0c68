"""``mx.nd``: NDArray and its operators, as in MXNet 1.x."""
from mx_ndarray import *  # noqa: F401,F403
from mx_ndarray import _internal, op  # noqa: F401
from mx_ndarray import __all__  # noqa: F401
