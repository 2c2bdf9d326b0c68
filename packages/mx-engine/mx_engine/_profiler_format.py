"""The profiler's outputs: the Chrome trace-event dict (chrome://tracing,
Perfetto) and the aggregate statistics as MXNet 1.9.1 prints them
(``dumps``: its table layout, or its JSON layout)."""
import json

from mx_engine import _engine
from mx_engine._profiler_state import DEVICE_STORAGE, device_name


def trace(events):
    """The Chrome trace dict of `events` (see _profiler_state).

    As in MXNet, engine functions sit in one process row per device
    ('cpu/0', 'gpu/0') with a thread row per worker; every other category
    (a Domain's name, 'event', 'Device Storage', ...) gets a process row of
    its own.  Timestamps are microseconds of the engine's monotonic clock.
    """
    devices = sorted({e[6] for e in events if e[0] == "op"})
    pids = {dev: i for i, dev in enumerate(devices)}
    cats = sorted({e[1] for e in events if e[0] != "op"})
    pids.update({cat: len(devices) + i for i, cat in enumerate(cats)})
    out = []
    rows = set()
    for kind, cat, name, ts, value, tid, extra in sorted(events, key=lambda e: e[3]):
        pid = pids[extra if kind == "op" else cat]
        rows.add((pid, tid))
        base = {"name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts / 1e3}
        if kind == "op":
            out.append(dict(base, ph="X", dur=max(value - ts, 0) / 1e3,
                            args={"ctx": device_name(*extra)}))
        elif kind == "task":
            out.append(dict(base, ph="b", id=extra))
            out.append(dict(base, ph="e", id=extra, ts=value / 1e3))
        elif kind == "span":
            out.append(dict(base, ph="B"))
            out.append(dict(base, ph="E", ts=value / 1e3))
        elif kind in ("counter", "memory"):
            out.append(dict(base, ph="C", args={name: value}))
        else:                                   # marker
            out.append(dict(base, ph="i", s=value))
    thread_names = _engine._thread_name_table()
    for dev, pid in pids.items():
        label = device_name(*dev) if isinstance(dev, tuple) else dev
        out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                    "args": {"name": label}})
    for pid, tid in sorted(rows):
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"name": thread_names.get(
                        tid, "allocators" if tid == 0 else f"thread {tid}")}})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


SORT_KEYS = ("total", "avg", "min", "max", "count")
# Where each sort key sits in a row (count, total, min, max, avg).
_SORT_INDEX = {"count": 0, "total": 1, "min": 2, "max": 3, "avg": 4}

_HEADER = "\nProfile Statistics:\n\tNote the difference in units for different entries.\n"
_TIME_COLUMNS = ("Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)")
_MEMORY_COLUMNS = ("Min Use  (kB)", "Max Use  (kB)", "Avg Use  (kB)")


def _time_rows(per_name, sort_by, ascending):
    """[(name, (count, total, min, max, avg))] in the requested order."""
    rows = [(name, (c, t, lo, hi, t / c)) for name, (c, t, lo, hi) in per_name.items()]
    rows.sort(key=lambda r: r[1][_SORT_INDEX[sort_by]], reverse=not ascending)
    return rows


def _memory_rows(per_name, sort_by, ascending):
    """[(name, (count, min_kB, max_kB, avg_kB))]; 'total' sorts by the
    average, the only sum-like column of a memory counter."""
    rows = [(name, (c, lo / 1e3, hi / 1e3, s / c / 1e3))
            for name, (c, lo, hi, s) in per_name.items()]
    index = {"count": 0, "min": 1, "max": 2}.get(sort_by, 3)
    rows.sort(key=lambda r: r[1][index], reverse=not ascending)
    return rows


def _section(title, columns, rows):
    """One category in MXNet's table layout: the name in 25 columns, the
    count in 16, every figure in 17 with four decimals."""
    lines = [title, "=================",
             f"{'Name':<25}{'Total Count':>16}" + "".join(f"{c:>17}" for c in columns),
             f"{'----':<25}{'-----------':>16}" + "".join(f"{'-' * len(c):>17}" for c in columns)]
    for name, (count, *figures) in rows:
        lines.append(f"{name:<25}{count:>16}" + "".join(f"{v:>17.4f}" for v in figures))
    return "\n".join(lines) + "\n\n"


def table(time_stats, memory_stats, sort_by, ascending):
    """MXNet's aggregate table: device memory first, then one section per
    category in name order."""
    parts = [_HEADER]
    if memory_stats:
        parts.append(_section(DEVICE_STORAGE, _MEMORY_COLUMNS,
                              _memory_rows(memory_stats, sort_by, ascending)))
    for cat in sorted(time_stats):
        parts.append(_section(cat, _TIME_COLUMNS,
                              _time_rows(time_stats[cat], sort_by, ascending)))
    return "".join(parts)


def _sig4(x):
    """MXNet writes JSON figures with four significant digits."""
    return float(f"{x:.4g}")


def as_json(time_stats, memory_stats, sort_by, ascending):
    """MXNet's aggregate JSON: {"Time": {category: {name: {Count, Total,
    Min, Max, Avg}}}, "Memory": {"Device Storage": {...}}, "Unit": ...}."""
    time = {cat: {name: {"Count": c, "Total": _sig4(t), "Min": _sig4(lo), "Max": _sig4(hi),
                         "Avg": _sig4(avg)}
                  for name, (c, t, lo, hi, avg) in _time_rows(time_stats[cat], sort_by,
                                                               ascending)}
            for cat in sorted(time_stats)}
    out = {"Time": time}
    if memory_stats:
        out["Memory"] = {DEVICE_STORAGE: {
            name: {"Count": c, "Min": _sig4(lo), "Max": _sig4(hi), "Avg": _sig4(avg)}
            for name, (c, lo, hi, avg) in _memory_rows(memory_stats, sort_by, ascending)}}
    out["Unit"] = {"Time": "ms", "Memory": "kB"}
    return json.dumps(out, indent=4)
