"""MXNet's profiling objects, to time and mark the Python side of a
program: Domain, Task, Frame, Event, Counter, Marker, and ``scope``.

They record only while the profiler runs and is not paused.  In the trace a
Task is an async begin/end pair in its domain's row, an Event and a Frame
are begin/end pairs (categories 'event' and '<domain>,frame'), a Counter a
counter track, a Marker an instant event ('<domain>,instant_marker').
"""
import contextlib
import itertools
import threading

from mx_engine import _engine
from mx_engine import _profiler_state as st
from mx_engine.base import MXNetError

_task_ids = itertools.count(1)


def _check_name(api, name):
    if not isinstance(name, str):
        raise TypeError(f"profiler.{api}: argument 'name' must be a str, "
                        f"got {type(name).__name__}")
    return name


def _check_domain(api, domain):
    if not isinstance(domain, Domain):
        raise TypeError(f"profiler.{api}: argument 'domain' must be a profiler.Domain, "
                        f"got {type(domain).__name__}")
    return domain


class Domain:
    """A category that groups tasks, frames, counters and markers (a row of
    the trace, a section of the aggregate table)."""

    def __init__(self, name):
        self.name = _check_name("Domain", name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Duration:
    """start()/stop() timing of one named region; one pass per stop()."""
    _kind = "span"

    def __init__(self, cat, name):
        self.name = name
        self._cat = cat
        self._start = None

    def start(self):
        """Starts timing (ignored unless the profiler records now)."""
        self._start = _engine._now_ns() if st.recording() else None

    def stop(self):
        """Stops timing; the region is recorded if it started while recording."""
        start, self._start = self._start, None
        if start is not None and st.recording():
            extra = next(_task_ids) if self._kind == "task" else None
            st.record(self._kind, self._cat, self.name, start, _engine._now_ns(),
                      _engine._current_tid(), extra)

    def __str__(self):
        return self.name


class Task(_Duration):
    """A unit of work of one thread; all passes aggregate into one row of
    the domain's statistics."""
    _kind = "task"

    def __init__(self, domain, name):
        super().__init__(_check_domain("Task", domain).name, _check_name("Task", name))


class Frame(_Duration):
    """A numbered period (a training step, a rendered frame), in the
    category '<domain>,frame'."""

    def __init__(self, domain, name):
        super().__init__(_check_domain("Frame", domain).name + ",frame",
                         _check_name("Frame", name))


class Event(_Duration):
    """A region of the calling thread, in the category 'event'."""

    def __init__(self, name):
        super().__init__("event", _check_name("Event", name))


class Counter:
    """A value tracked over time (set_value, increment, decrement, +=, -=)."""

    def __init__(self, domain, name, value=None):
        self.name = _check_name("Counter", name)
        self._cat = _check_domain("Counter", domain).name
        self._lock = threading.Lock()
        self._value = 0
        if value is not None:
            self.set_value(value)

    def _update(self, value, delta):
        with self._lock:
            self._value = value if delta is None else self._value + delta
            if st.recording():
                st.record("counter", self._cat, self.name, _engine._now_ns(), self._value,
                          _engine._current_tid())

    def set_value(self, value):
        self._update(int(value), None)

    def increment(self, delta=1):
        self._update(None, int(delta))

    def decrement(self, delta=1):
        self._update(None, -int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


# MXNet's marker scopes, as trace-event instant scopes (g/p/t).
_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Marker:
    """An instant in time, in the category '<domain>,instant_marker'."""

    def __init__(self, domain, name):
        self.name = _check_name("Marker", name)
        self.domain = _check_domain("Marker", domain)

    def mark(self, scope="process"):
        """Records the instant; ``scope`` is 'global', 'process', 'thread',
        'task' or 'marker'."""
        if scope not in _MARKER_SCOPES:
            raise MXNetError(f"Invalid Input: '{scope}', valid values are: "
                             "{'global', 'marker', 'process', 'task', 'thread'}")
        if st.recording():
            st.record("marker", self.domain.name + ",instant_marker", self.name,
                      _engine._now_ns(), _MARKER_SCOPES[scope], _engine._current_tid())


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=False):
    """Names the engine functions this thread pushes inside the block:
    while profiling, their events read '<scope><operator>' ('fwd:dot').
    A ':' is added to a name that lacks one; with ``append_mode`` the
    name is appended to the enclosing scope's ('outer:inner:')."""
    _check_name("scope", name)
    if not name.endswith(":"):
        name += ":"
    prev = _engine._set_scope(None)
    full = prev + name if append_mode and prev is not None else name
    _engine._set_scope(full)
    try:
        yield
    finally:
        _engine._set_scope(prev)
