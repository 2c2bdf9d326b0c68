"""The profiler's state: its configuration, run/pause state, the recorded
events and the aggregate statistics.  The engine records its functions and
the allocators' memory use in C; everything recorded from Python (tasks,
frames, events, counters, markers) comes through `record`.

Events are kept as tuples (kind, category, name, ts_ns, value, tid, extra):

  kind      value           extra
  'op'      end_ns          (dev_type, dev_id)       an engine function
  'task'    end_ns          task id                  Task: async b/e pair
  'span'    end_ns          None                     Event, Frame: B/E pair
  'counter' counter value   None                     Counter
  'memory'  bytes in use    (dev_type, dev_id)       a pool's use changed
  'marker'  scope letter    None                     Marker
"""
import threading

from mx_engine import _engine

lock = threading.RLock()

# MXNet 1.9.1's ProfileConfigParam, with its defaults.
DEFAULTS = {"filename": "profile.json", "profile_all": False, "profile_symbolic": True,
            "profile_imperative": True, "profile_memory": True, "profile_api": True,
            "continuous_dump": False, "dump_period": 1.0, "aggregate_stats": False,
            "profile_process": "worker"}
config = dict(DEFAULTS)

running = False          # set_state('run') and no dump(finished=True) since
ever_run = False         # set_state('run') was called once: dump() may write
paused = False
api_on = False           # time the API entry points now (_profiler_api)
# As in MXNet, the trace and the aggregate statistics are kept apart: dump()
# empties the first, dumps(reset=True) the second.
events = []
time_stats = {}          # category -> name -> [count, total_ms, min_ms, max_ms]
memory_stats = {}        # counter name -> [count, min_bytes, max_bytes, sum_bytes]

DEVICE_NAMES = {1: "cpu", 2: "gpu", 3: "cpu pinned", 5: "cpu shared"}
OPERATOR = "operator"
DEVICE_STORAGE = "Device Storage"


def device_name(dev_type, dev_id):
    """MXNet's row and counter names: 'cpu/0', 'gpu/1'."""
    return f"{DEVICE_NAMES.get(dev_type, f'device{dev_type}')}/{dev_id}"


def recording():
    """Whether Python-side objects record now (running and not paused)."""
    return running and not paused


def _wants(option):
    return bool(config["profile_all"] or config[option])


def sync_engine():
    """Tells the engine what to record now (call with the lock held):
    functions pushed by an executor (profile_symbolic) or by imperative
    calls (profile_imperative), memory use, API calls (profile_api)."""
    global api_on
    on = running and not paused
    _engine._profiler_enable(on and _wants("profile_imperative"),
                             on and _wants("profile_symbolic"),
                             on and _wants("profile_memory"))
    api_on = on and _wants("profile_api")
    _engine._profiler_enable_api(api_on)


def _add_time(cat, name, ms):
    per_cat = time_stats.get(cat)
    if per_cat is None:
        per_cat = time_stats[cat] = {}
    s = per_cat.get(name)
    if s is None:
        per_cat[name] = [1, ms, ms, ms]
    else:
        s[0] += 1
        s[1] += ms
        if ms < s[2]:
            s[2] = ms
        if ms > s[3]:
            s[3] = ms


def _add_memory(name, used):
    s = memory_stats.get(name)
    if s is None:
        memory_stats[name] = [1, used, used, used]
    else:
        s[0] += 1
        s[1] = min(s[1], used)
        s[2] = max(s[2], used)
        s[3] += used


def record(kind, cat, name, ts_ns, value, tid, extra=None):
    """Adds one event from Python (call only while `recording()`)."""
    with lock:
        _add(kind, cat, name, ts_ns, value, tid, extra)


def _add(kind, cat, name, ts_ns, value, tid, extra):
    events.append((kind, cat, name, ts_ns, value, tid, extra))
    if kind in ("task", "span"):
        _add_time(cat, name, (value - ts_ns) / 1e6)
    elif kind == "counter":
        # MXNet aggregates counter values in the time columns, as if they
        # were microseconds.
        _add_time(cat, name, value / 1e3)
    elif kind == "marker":
        time_stats.setdefault(cat, {})     # MXNet lists the category, empty


def collect():
    """Moves what the engine recorded, and the API calls timed, into the
    events and the statistics."""
    from mx_engine import _profiler_api     # it imports this module
    with lock:
        for ev in _profiler_api.drain():
            _add(*ev)
        for name, start, end, tid, dev_type, dev_id, scope in _engine._profiler_take(True):
            if scope is not None:
                name = scope + name
            events.append(("op", OPERATOR, name, start, end, tid, (dev_type, dev_id)))
            _add_time(OPERATOR, name, (end - start) / 1e6)
        for ts, used, dev_type, dev_id in _engine._profiler_take_memory():
            name = "Memory: " + device_name(dev_type, dev_id)
            events.append(("memory", DEVICE_STORAGE, name, ts, used, 0, (dev_type, dev_id)))
            _add_memory(name, used)
