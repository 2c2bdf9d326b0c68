"""``mx.engine``: MXNet's ``bulk``/``set_bulk_size`` plus the engine's push API."""
from mx_engine.engine import *  # noqa: F401,F403
from mx_engine.engine import __all__  # noqa: F401
