"""The profiler, with MXNet 1.9.1's API: engine functions (operators) and
device memory use, recorded in C by the engine's workers and the pooled
allocator, plus the Python side's Domain/Task/Frame/Event/Counter/Marker
objects; written as a chrome://tracing / Perfetto trace (``dump``) and
summed up per name in MXNet's aggregate table or JSON (``dumps``)."""
import json
import os
import threading
import warnings

from mx_engine import _profiler_format as fmt
from mx_engine import _profiler_state as st
from mx_engine._profiler_objects import Counter, Domain, Event, Frame, Marker, Task, scope
from mx_engine.base import MXNetError

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps",
           "aggregate", "trace", "profiler_set_config", "profiler_set_state", "dump_profile",
           "set_kvstore_handle", "Domain", "Task", "Frame", "Event", "Counter", "Marker",
           "scope"]


# A bad argument raises the exception type MXNet raises (MXNetError from
# set_config, KeyError from a bad state or process, AssertionError from
# dumps), which is also a ValueError.
class _ConfigError(MXNetError, ValueError):
    pass


class _ChoiceError(KeyError, ValueError):
    def __str__(self):
        return self.args[0]


class _DumpsArgumentError(AssertionError, ValueError):
    pass


_BOOL_OPTIONS = {"profile_all", "profile_symbolic", "profile_imperative", "profile_memory",
                 "profile_api", "continuous_dump", "aggregate_stats"}


def _parse_option(key, value):
    """A set_config value checked and converted as MXNet's parameter parser
    does (MXNet passes every value through str())."""
    if key in _BOOL_OPTIONS:
        text = str(value).lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise _ConfigError(f"Invalid Parameter format for {key} expect boolean "
                           f"but value='{value}'")
    if key == "dump_period":
        try:
            period = float(value)
        except (TypeError, ValueError):
            raise _ConfigError(f"Invalid Parameter format for dump_period expect float "
                               f"but value='{value}'") from None
        if not period > 0:
            raise _ConfigError(f"profiler.set_config: dump_period must be > 0 seconds, "
                               f"got {value!r}")
        return period
    if key == "profile_process":
        return _process(value)
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _process(profile_process):
    """'worker' (this process); 'server' needs a distributed kvstore."""
    if profile_process == "worker":
        return profile_process
    if profile_process == "server":
        raise MXNetError("profiler: profile_process='server' profiles a distributed "
                         "kvstore's server, and there is no distributed kvstore here")
    raise _ChoiceError(f"profiler: profile_process must be 'worker' or 'server', "
                       f"got {profile_process!r}")


def set_config(**kwargs):
    """Sets profiler options (keywords only), MXNet's ProfileConfigParam:
    ``filename`` (trace path, default 'profile.json'), ``profile_all``,
    ``profile_symbolic`` (the functions executors push),
    ``profile_imperative`` (those imperative calls push), ``profile_memory``
    (device memory in use), ``profile_api`` (the API calls, under the names
    of MXNet's C API functions they stand for: _profiler_api),
    ``continuous_dump`` with ``dump_period`` (seconds between writes of
    the trace while running), ``aggregate_stats`` and ``profile_process``.
    The statistics of ``dumps`` are kept whatever ``aggregate_stats`` says."""
    parsed = {}
    for key, value in kwargs.items():
        if key not in st.DEFAULTS:
            raise _ConfigError(f"profiler.set_config: unknown option {key!r} (Cannot find "
                               f"argument '{key}'), Possible Arguments: "
                               f"{', '.join(sorted(st.DEFAULTS))}")
        parsed[key] = _parse_option(key, value)
    with st.lock:
        st.config.update(parsed)
        st.sync_engine()
        _dumper.update()


def set_state(state="stop", profile_process="worker"):
    """'run' starts recording, 'stop' ends it."""
    _process(profile_process)
    if state not in ("run", "stop"):
        raise _ChoiceError(f"profiler.set_state: state must be 'run' or 'stop', "
                           f"got {state!r}")
    with st.lock:
        st.running = state == "run"
        st.ever_run = st.ever_run or st.running
        st.paused = False
        st.sync_engine()
        _dumper.update()


def state():
    """'run' or 'stop'."""
    return "run" if st.running else "stop"


def pause(profile_process="worker"):
    """Stops recording without changing the state; ``resume`` goes on."""
    _process(profile_process)
    with st.lock:
        st.paused = True
        st.sync_engine()


def resume(profile_process="worker"):
    """Records again after ``pause``."""
    _process(profile_process)
    with st.lock:
        st.paused = False
        st.sync_engine()


def trace(events=None):
    """The recorded events (all not yet dropped by a finished dump) as a
    Chrome trace-event dict."""
    if events is None:
        with st.lock:
            st.collect()
            events = list(st.events)
    return fmt.trace(events)


def dump(finished=True, profile_process="worker"):
    """Writes the trace to the configured ``filename``.  With ``finished``
    (the default) recording stops and the written events are dropped;
    without, it goes on and the next dump writes them again with the new.
    Raises MXNetError, as MXNet, if the profiler has never run."""
    _process(profile_process)
    with st.lock:
        if not st.ever_run:
            raise MXNetError("profiler.dump: the profiler hasn't been run; call "
                             "set_state('run') first (Check failed: "
                             "profiler->IsEnableOutput())")
        if finished:
            st.running = False
            st.paused = False
            st.sync_engine()
            _dumper.update()
        st.collect()
        events = list(st.events)
        if finished:
            st.events.clear()
        filename = st.config["filename"]
    data = fmt.trace(events)
    # Written whole, then renamed: a viewer (or a continuous dump) never
    # sees half a file.
    tmp = f"{filename}.tmp{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, filename)


def aggregate(reset=False):
    """{operator name: (count, total_ms, min_ms, max_ms, avg_ms)} since the
    last reset."""
    with st.lock:
        st.collect()
        ops = st.time_stats.get(st.OPERATOR, {})
        out = {k: (c, t, lo, hi, t / c) for k, (c, t, lo, hi) in ops.items()}
        if reset:
            _reset_stats()
    return out


def _reset_stats():
    st.time_stats.clear()
    st.memory_stats.clear()


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics, in MXNet's table (or ``format='json'``)
    layout: per category (operator, each Domain, event, Device Storage)
    the count, total, min, max and average time in ms (memory in kB),
    ordered by ``sort_by`` ('total', 'avg', 'min', 'max', 'count'),
    descending unless ``ascending``.  ``reset`` clears them afterwards."""
    if format not in ("table", "json"):
        raise _DumpsArgumentError(f"Invalid value provided for format: {format}. "
                                  "Support: 'table', 'json'")
    if sort_by not in fmt.SORT_KEYS:
        raise _DumpsArgumentError(f"Invalid value provided for sort_by: {sort_by}. "
                                  "Support: 'total', 'avg', 'min', 'max', 'count'")
    if ascending not in (False, True):
        raise _DumpsArgumentError(f"Invalid value provided for ascending: {ascending}. "
                                  "Support: False, True")
    if reset not in (False, True):
        raise _DumpsArgumentError(f"Invalid value provided for reset: {reset}. "
                                  "Support: False, True")
    render = fmt.table if format == "table" else fmt.as_json
    with st.lock:
        st.collect()
        out = render(st.time_stats, st.memory_stats, sort_by, bool(ascending))
        if reset:
            _reset_stats()
    return out


class _Dumper:
    """The continuous dump: while running with ``continuous_dump``, a
    thread writes the trace every ``dump_period`` seconds."""

    def __init__(self):
        self._stop = None

    def update(self):
        """Starts or stops the thread to match the state (lock held)."""
        want = st.running and st.config["continuous_dump"]
        if want and self._stop is None:
            self._stop = threading.Event()
            threading.Thread(target=self._loop, args=(self._stop,), daemon=True,
                             name="mx profiler continuous dump").start()
        elif not want and self._stop is not None:
            self._stop.set()
            self._stop = None

    @staticmethod
    def _loop(stop):
        while not stop.wait(st.config["dump_period"]):
            with st.lock:
                if stop.is_set():
                    return
                dump(finished=False)


_dumper = _Dumper()


# ---- MXNet's deprecated spellings -----------------------------------------
def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated: ``set_config(profile_<mode>=True, filename=filename)``."""
    warnings.warn("profiler.profiler_set_config() is deprecated. "
                  "Please use profiler.set_config() instead")
    set_config(**{"profile_" + mode: True, "filename": filename})


def profiler_set_state(state="stop"):
    """Deprecated: ``set_state(state)``."""
    warnings.warn("profiler.profiler_set_state() is deprecated. "
                  "Please use profiler.set_state() instead")
    set_state(state)


def dump_profile():
    """Deprecated: ``dump(True)``."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead")
    dump(True)


_kvstore_handle = None


def set_kvstore_handle(handle):
    """Kept for MXNet scripts: the kvstore whose server profile_process='server'
    would address (there is no distributed kvstore here)."""
    global _kvstore_handle
    _kvstore_handle = handle


for _obj in (Domain, Task, Frame, Event, Counter, Marker, scope):
    _obj.__module__ = __name__
del _obj
