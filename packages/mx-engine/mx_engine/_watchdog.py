"""Reports engine functions that wait or run longer than a limit
(MXNET_ENGINE_WATCHDOG_SECONDS), so a hang says what it is stuck on."""
import logging
import threading

log = logging.getLogger("mx_engine")

_thread = None
_stop = threading.Event()


def format_pending(items):
    """One paragraph per pending function: where it was pushed, its state,
    and what each variable it waits on is held by."""
    lines = []
    for p in items:
        head = (f"#{p['seq']} '{p['name']}' on {p['ctx']} {p['state']} for "
                f"{p['age_s']:.3f} s (pushed at {p['site'] or '?'})")
        lines.append(head)
        lines.append(f"    reads {p['reads']} writes {p['writes']}")
        for w in p["waits_on"]:
            lines.append(f"    waits to {w['mode']} var #{w['var']}: held by "
                         f"{w['held_by']}, {w['queued_ahead']} queued ahead")
    return "\n".join(lines)


def stuck(limit_s, items):
    """The items waiting, or running, for longer than ``limit_s`` seconds."""
    out = []
    for p in items:
        age = p["running_s"] if p["state"] == "running" else p["age_s"]
        if age is not None and age > limit_s:
            out.append(p)
    return out


def _run(limit_s):
    from mx_engine._engine import pending
    reported = set()
    while not _stop.wait(min(limit_s, 1.0)):
        late = [p for p in stuck(limit_s, pending()) if p["seq"] not in reported]
        if late:
            reported.update(p["seq"] for p in late)
            log.warning("mx_engine watchdog: %d function(s) pending longer than "
                        "%.3g s:\n%s", len(late), limit_s, format_pending(late))


def start(limit_s):
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    _stop.clear()
    _thread = threading.Thread(target=_run, args=(limit_s,), daemon=True,
                               name="mx-engine watchdog")
    _thread.start()


def stop():
    global _thread
    if _thread is not None:
        _stop.set()
        if _thread is not threading.current_thread():
            _thread.join()
        _thread = None
