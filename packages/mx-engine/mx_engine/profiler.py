"""The profiler: engine functions as a chrome://tracing / Perfetto trace,
and an aggregate table per function name, with MXNet 1.x's API
(``set_config``, ``set_state``, ``dump``, ``dumps``, ``pause``, ``resume``)."""
import json
import os
import threading

from mx_engine import _engine

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps",
           "aggregate", "trace"]

_lock = threading.Lock()
_config = {"filename": "profile.json", "profile_all": False, "profile_symbolic": True,
           "profile_imperative": True, "profile_memory": True, "profile_api": True,
           "aggregate_stats": False, "continuous_dump": False}
_state = "stop"
# As in MXNet, the trace and the aggregate statistics are kept apart: dump()
# empties the first, dumps(reset=True) the second.
_events = []        # taken from the engine, not yet written to a trace
_stats = {}         # name -> [count, total_ms, min_ms, max_ms]

_KNOWN = set(_config) | {"dump_period", "profile_process"}
_DEVTYPE = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}


def set_config(**kwargs):
    """Sets profiler options: ``filename`` (trace path, default
    'profile.json'), ``profile_all``, ``profile_symbolic``,
    ``profile_imperative``, ``aggregate_stats`` and MXNet's other flags.
    Engine functions are recorded when any of profile_all / symbolic /
    imperative is on."""
    for key in kwargs:
        if key not in _KNOWN:
            raise ValueError(f"profiler.set_config: unknown option {key!r}; known: "
                             f"{', '.join(sorted(_KNOWN))}")
    with _lock:
        _config.update(kwargs)
        if _state == "run":
            _engine._profiler_enable(_records_functions())


def _records_functions():
    return bool(_config["profile_all"] or _config["profile_symbolic"]
                or _config["profile_imperative"])


def set_state(state="stop"):
    """'run' starts recording, 'stop' ends it."""
    global _state
    if state not in ("run", "stop"):
        raise ValueError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    with _lock:
        _state = state
        _engine._profiler_enable(state == "run" and _records_functions())


def state():
    """'run' or 'stop'."""
    return _state


def pause():
    """Stops recording without changing the state."""
    _engine._profiler_enable(False)


def resume():
    """Records again after pause()."""
    with _lock:
        _engine._profiler_enable(_state == "run" and _records_functions())


def _collect():
    """Moves the engine's new events into the trace and the statistics."""
    new = _engine._profiler_take(True)
    _events.extend(new)
    for name, start, end, *_ in new:
        ms = (end - start) / 1e6
        s = _stats.get(name)
        if s is None:
            _stats[name] = [1, ms, ms, ms]
        else:
            s[0] += 1
            s[1] += ms
            s[2] = min(s[2], ms)
            s[3] = max(s[3], ms)


def trace(events=None):
    """The recorded functions as a Chrome trace-event dict: one complete
    ("X") event per function, one row (tid) per thread, named."""
    if events is None:
        with _lock:
            _collect()
            events = list(_events)
    names = _engine._thread_name_table()
    pid = os.getpid()
    out = []
    tids = set()
    for name, start, end, tid, dev_type, dev_id in events:
        tids.add(tid)
        out.append({"name": name, "cat": "operator", "ph": "X", "pid": pid, "tid": tid,
                    "ts": start / 1e3, "dur": max(end - start, 0) / 1e3,
                    "args": {"ctx": f"{_DEVTYPE.get(dev_type, dev_type)}({dev_id})"}})
    for tid in sorted(tids):
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"name": names.get(tid, f"thread {tid}")}})
    out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                "args": {"name": "mx engine"}})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def dump(finished=True, profile_process="worker"):
    """Writes the trace to the configured ``filename``.  With ``finished``
    (the default) recording stops and the recorded events are dropped."""
    if finished:
        set_state("stop")
    with _lock:
        _collect()
        events = list(_events)
        if finished:
            _events.clear()
    with open(_config["filename"], "w") as f:
        json.dump(trace(events), f)


def aggregate(reset=False):
    """{name: (count, total_ms, min_ms, max_ms, avg_ms)} since the last reset."""
    with _lock:
        _collect()
        out = {k: (c, t, lo, hi, t / c) for k, (c, t, lo, hi) in _stats.items()}
        if reset:
            _stats.clear()
    return out


_SORT_KEYS = {"count": 0, "total": 1, "min": 2, "max": 3, "avg": 4}


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics per function name as a table (or JSON with
    ``format='json'``): count, total, min, max and average time in ms."""
    if sort_by not in _SORT_KEYS:
        raise ValueError(f"profiler.dumps: sort_by must be one of {sorted(_SORT_KEYS)}, "
                         f"got {sort_by!r}")
    if format not in ("table", "json"):
        raise ValueError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    stats = aggregate(reset)
    rows = sorted(stats.items(), key=lambda kv: kv[1][_SORT_KEYS[sort_by]],
                  reverse=not ascending)
    if format == "json":
        return json.dumps({"Time": {"operator": {
            name: {"Count": c, "Total": t, "Min": lo, "Max": hi, "Avg": avg}
            for name, (c, t, lo, hi, avg) in rows}}, "Unit": {"Time": "ms"}})
    width = max([len("Name")] + [len(n) for n in stats]) + 2
    lines = ["Profile Statistics:", "\tNote the difference in units for different entries.",
             "operator", "=================",
             f"{'Name':<{width}}{'Total Count':>12}{'Time (ms)':>14}{'Min Time (ms)':>16}"
             f"{'Max Time (ms)':>16}{'Avg Time (ms)':>16}",
             f"{'----':<{width}}{'-----------':>12}{'---------':>14}{'-------------':>16}"
             f"{'-------------':>16}{'-------------':>16}"]
    for name, (c, t, lo, hi, avg) in rows:
        lines.append(f"{name:<{width}}{c:>12}{t:>14.4f}{lo:>16.4f}{hi:>16.4f}{avg:>16.4f}")
    return "\n".join(lines) + "\n"
