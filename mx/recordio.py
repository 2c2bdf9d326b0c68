"""``mx.recordio``: MXNet's RecordIO files (mx_io.recordio)."""
from mx_io.recordio import *  # noqa: F401,F403
from mx_io.recordio import __all__  # noqa: F401
