"""``mx.profiler``: MXNet 1.9.1's profiler API (mx-engine owns the recorder)."""
from mx_engine.profiler import (Counter, Domain, Event, Frame, Marker, Task,  # noqa: F401
                                aggregate, dump, dump_profile, dumps, pause,
                                profiler_set_config, profiler_set_state, resume, scope,
                                set_config, set_kvstore_handle, set_state, state, trace)
