import logging
import threading
import time

from mx_engine import cpu, engine


def test_pending_lists_waiting_functions_and_what_they_wait_on(threaded_engine):
    gate = threading.Event()
    v, w = engine.new_variable("v"), engine.new_variable("w")
    engine.push_sync(lambda rc: gate.wait(30), cpu(), mutate_vars=[v], name="holder")
    engine.push_sync(lambda rc: None, cpu(), const_vars=[v], mutate_vars=[w], name="blocked")
    time.sleep(0.05)
    items = engine.pending()
    by_name = {p["name"]: p for p in items}
    assert by_name["holder"]["state"] == "running"
    blocked = by_name["blocked"]
    assert blocked["state"] == "waiting" and blocked["site"].endswith(".py:" + blocked["site"].split(":")[-1])
    assert blocked["reads"] == [v.id] and blocked["writes"] == [w.id]
    wait, = blocked["waits_on"]
    assert wait["var"] == v.id and wait["mode"] == "read"
    assert "'holder'" in wait["held_by"] and wait["queued_ahead"] == 0
    text = engine.dump_pending(file=open("/dev/null", "w"))
    assert "'blocked'" in text and f"waits to read var #{v.id}" in text
    gate.set()
    engine.wait_for_all()
    assert engine.pending() == []


def test_watchdog_reports_functions_stuck_too_long(restart, caplog):
    restart(MXNET_ENGINE_WATCHDOG_SECONDS="0.2")
    gate = threading.Event()
    v = engine.new_variable()
    with caplog.at_level(logging.WARNING, logger="mx_engine"):
        engine.push_sync(lambda rc: gate.wait(30), cpu(), mutate_vars=[v], name="stuck_fn")
        engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v], name="behind_it")
        deadline = time.monotonic() + 10
        while "behind_it" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        gate.set()
        engine.wait_for_all()
    assert "watchdog" in caplog.text
    assert "'stuck_fn'" in caplog.text and "'behind_it'" in caplog.text
    assert "held by writer" in caplog.text
