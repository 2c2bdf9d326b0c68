"""``mx.ndarray.op``: one NDArray function per registered operator."""
from mx_ndarray.op import *  # noqa: F401,F403
from mx_ndarray.op import __all__, __getattr__  # noqa: F401
