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
`_profiler_state.api_on`; `_profiler_state.sync_engine` sets both.

A timed call costs two clock reads and one append to a deque (safe from any
thread without a lock); the events and counters are made from those when
the profiler's state is read (`_profiler_state.collect` calls `drain`).
"""
import collections
import functools

from mx_engine import _engine
from mx_engine import _profiler_state as st
from mx_engine._profiler_objects import _task_ids

DOMAIN = "MXNET_C_API"
CALLS = "MXNet C API Calls"
CONCURRENCY = "MXNet C API Concurrency"

_done = collections.deque()      # (name, start_ns, end_ns, tid) per finished call
_calls = 0                       # calls drained so far: the Calls counter's value


def enter():
    """An API call's start (the token `leave` takes)."""
    return _engine._now_ns()


def leave(name, start_ns):
    """Keeps the API call ``name`` that started at ``start_ns``."""
    _done.append((name, start_ns, _engine._now_ns(), _engine._current_tid()))


def drain():
    """The calls finished since the last drain as profiler events (kind,
    category, name, ts_ns, value, tid, extra), time-ordered: each call's
    task, and MXNet's two counters at each entry and exit."""
    global _calls
    calls = []
    while True:
        try:
            calls.append(_done.popleft())
        except IndexError:
            break
    events = []
    edges = []                   # (ts, +1 entry / -1 exit, tid)
    for name, start, end, tid in calls:
        events.append(("task", DOMAIN, name, start, end, tid, next(_task_ids)))
        edges.append((start, 1, tid))
        edges.append((end, -1, tid))
    edges.sort()
    in_progress = 0
    for ts, step, tid in edges:
        in_progress = max(in_progress + step, 0)
        if step > 0:
            _calls += 1
            events.append(("counter", DOMAIN, CALLS, ts, _calls, tid, None))
        events.append(("counter", DOMAIN, CONCURRENCY, ts, in_progress, tid, None))
    return events


def entry(name):
    """Decorates a Python entry point that stands for C API function
    ``name``: timed while ``_profiler_state.api_on``, else one flag read
    and one call more."""
    def wrap(fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not st.api_on:
                return fn(*args, **kwargs)
            start = _engine._now_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                leave(name, start)
        return timed
    return wrap
