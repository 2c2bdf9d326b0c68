"""``mx.profiler``: MXNet 1.x's profiler API over the engine's recorder."""
from mx_engine.profiler import (aggregate, dump, dumps, pause, resume, set_config,  # noqa: F401
                                set_state, state, trace)
