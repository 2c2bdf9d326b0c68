"""``profile_api``: MXNet 1.9.1 times every C API call its Python front end
makes, as a task in the domain 'MXNET_C_API' named after the C function,
with two counters: 'MXNet C API Calls' (calls so far) and 'MXNet C API
Concurrency' (calls in progress, on entry and on exit).

There is no C API under our Python one, so the entry points that stand for
MXNet's calls are timed under those calls' names, and a profile reads as
MXNet's: an operator call (MXImperativeInvokeEx), a copy to or from NumPy
(MXNDArraySyncCopyToCPU / FromCPU), the waits (MXNDArrayWaitToRead,
MXNDArrayWaitAll), an executor's bind, forward and backward, autograd's
backward.  While the flag is off an entry point pays one flag read: the
Cython ones read the engine's C flag (`profiler_api_flag`), the Python ones
`_profiler_state.api_on`; `_profiler_state.sync_engine` sets both."""
import functools
import threading

from mx_engine import _engine
from mx_engine import _profiler_state as st
from mx_engine._profiler_objects import _task_ids

DOMAIN = "MXNET_C_API"
CALLS = "MXNet C API Calls"
CONCURRENCY = "MXNet C API Concurrency"

_lock = threading.Lock()
_calls = 0
_in_progress = 0


def enter():
    """Marks an API call's start; returns the token `leave` takes."""
    global _calls, _in_progress
    now = _engine._now_ns()
    with _lock:
        _calls += 1
        _in_progress += 1
        calls, in_progress = _calls, _in_progress
    tid = _engine._current_tid()
    st.record("counter", DOMAIN, CALLS, now, calls, tid)
    st.record("counter", DOMAIN, CONCURRENCY, now, in_progress, tid)
    return now


def leave(name, start_ns):
    """Records the API call ``name`` that `enter` started at ``start_ns``."""
    global _in_progress
    now = _engine._now_ns()
    with _lock:
        _in_progress -= 1
        in_progress = _in_progress
    tid = _engine._current_tid()
    if st.recording():
        st.record("task", DOMAIN, name, start_ns, now, tid, next(_task_ids))
        st.record("counter", DOMAIN, CONCURRENCY, now, in_progress, tid)


class call:
    """``with _profiler_api.call('MXExecutorForward'):`` times the block
    when ``_profiler_state.api_on`` (test it first: the off path should not build this)."""
    __slots__ = ("name", "start")

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.start = enter()

    def __exit__(self, *exc):
        leave(self.name, self.start)
        return False


def entry(name):
    """Decorates a Python entry point that stands for C API function
    ``name``: timed while ``_profiler_state.api_on``, else one flag read
    and one call more."""
    def wrap(fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not st.api_on:
                return fn(*args, **kwargs)
            start = enter()
            try:
                return fn(*args, **kwargs)
            finally:
                leave(name, start)
        return timed
    return wrap
