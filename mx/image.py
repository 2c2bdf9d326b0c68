"""``mx.image``: MXNet's image functions (mx_io.image)."""
from mx_io.image import *  # noqa: F401,F403
from mx_io.image import __all__  # noqa: F401
