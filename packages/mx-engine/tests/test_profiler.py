import json
import threading
import time

import pytest

from mx_engine import _testing, cpu, engine, profiler


@pytest.fixture
def recording(tmp_path):
    # Start from an empty trace and empty statistics whatever ran before.
    profiler.set_config(filename=str(tmp_path / "earlier.json"), profile_all=True)
    profiler.dump(finished=True)
    profiler.aggregate(reset=True)
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    profiler.set_state("run")
    yield tmp_path / "trace.json"
    profiler.set_state("stop")
    profiler.aggregate(reset=True)


def test_trace_has_one_row_per_worker_and_an_event_per_function(recording):
    a, b = engine.new_variable(), engine.new_variable()
    for _ in range(3):
        engine.push_sync(lambda rc: time.sleep(0.002), cpu(), mutate_vars=[a], name="slow_a")
        engine.push_sync(lambda rc: time.sleep(0.002), cpu(), mutate_vars=[b], name="slow_b")
    _testing.push_noop(cpu(), writes=[a])
    engine.wait_for_all()
    profiler.dump()
    trace = json.loads(recording.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["name"] for e in events) == ["native_noop"] + ["slow_a"] * 3 + ["slow_b"] * 3
    assert all(e["dur"] >= 2000 for e in events if e["name"].startswith("slow"))
    rows = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in events} <= set(rows)
    assert all(name.startswith("mx-engine cpu(0) worker") for name in rows.values())
    # functions of one variable never overlap in the trace
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "slow_a")
    assert all(spans[i][1] <= spans[i + 1][0] + 1e-3 for i in range(2))


def test_dumps_aggregates_per_name_and_survives_dump(recording):
    v = engine.new_variable()
    for _ in range(4):
        engine.push_sync(lambda rc: time.sleep(0.001), cpu(), mutate_vars=[v], name="nap")
    engine.wait_for_all()
    profiler.dump()                    # MXNet keeps the statistics after a dump
    table = profiler.dumps()
    line = next(l for l in table.splitlines() if l.startswith("nap"))
    count, total, lo, hi, avg = line.split()[1:]
    assert int(count) == 4 and float(lo) >= 1.0 and float(hi) >= float(avg) >= float(lo)
    assert abs(float(total) - 4 * float(avg)) < 1e-3
    stats = json.loads(profiler.dumps(format="json", reset=True))
    assert stats["Time"]["operator"]["nap"]["Count"] == 4
    assert "nap" not in profiler.dumps()


def test_nothing_recorded_when_stopped(recording):
    profiler.set_state("stop")
    engine.push_sync(lambda rc: None, cpu(), mutate_vars=[engine.new_variable()], name="unseen")
    engine.wait_for_all()
    assert "unseen" not in profiler.dumps()


def test_pause_and_resume(recording):
    v = engine.new_variable()
    profiler.pause()
    engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v], name="paused")
    engine.wait_for_all()
    profiler.resume()
    engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v], name="resumed")
    engine.wait_for_all()
    names = profiler.aggregate()
    assert "resumed" in names and "paused" not in names


def test_bad_profiler_arguments():
    with pytest.raises(ValueError, match="unknown option 'profile_everything'"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(ValueError, match="'run' or 'stop'"):
        profiler.set_state("go")
    with pytest.raises(ValueError, match="sort_by"):
        profiler.dumps(sort_by="name")
