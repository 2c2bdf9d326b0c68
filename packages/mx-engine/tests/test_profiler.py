import json
import subprocess
import sys
import threading
import time

import pytest

from mx_engine import _testing, cpu, engine, profiler


@pytest.fixture
def recording(tmp_path):
    # Start from an empty trace and empty statistics whatever ran before.
    profiler.set_config(filename=str(tmp_path / "earlier.json"), profile_all=True)
    profiler.set_state("run")                # dump() needs a profiler that has run
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


# ---- MXNet 1.9.1's full API ------------------------------------------------
import pathlib
import re
import warnings

from mx_engine.base import MXNetError

DATA = pathlib.Path(__file__).with_name("data")


@pytest.fixture
def fresh(tmp_path):
    """Stopped, nothing recorded, MXNet's default options; the trace goes
    to tmp_path/trace.json."""
    profiler.set_state("stop")
    profiler.set_config(filename=str(tmp_path / "earlier.json"), profile_all=False,
                        profile_symbolic=True, profile_imperative=True, profile_memory=True,
                        continuous_dump=False, dump_period=1.0, aggregate_stats=True)
    profiler.set_state("run")                # dump() needs a profiler that has run
    profiler.dump(finished=True)
    profiler.dumps(reset=True)
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    yield tmp_path / "trace.json"
    profiler.set_state("stop")
    profiler.set_config(continuous_dump=False)
    profiler.dumps(reset=True)


def _dumped(path):
    profiler.dump()
    return json.loads(path.read_text())["traceEvents"]


def _naps(name, n, seconds):
    v = engine.new_variable()
    for _ in range(n):
        engine.push_sync(lambda rc: time.sleep(seconds), cpu(), mutate_vars=[v], name=name)


def test_trace_events_are_ordered_with_durations_and_named_worker_rows(fresh):
    profiler.set_state("run")
    _naps("first", 3, 0.001)
    _naps("second", 2, 0.0)
    engine.wait_for_all()
    events = _dumped(fresh)
    ops = [e for e in events if e["ph"] == "X"]
    assert sorted(e["name"] for e in ops) == ["first"] * 3 + ["second"] * 2
    assert all(e["cat"] == "operator" and e["dur"] >= 0 for e in ops)
    stamps = [e["ts"] for e in events if e["ph"] != "M"]
    assert stamps == sorted(stamps)
    meta = {(e["name"], e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M"}
    assert all(meta[("process_name", e["pid"], 0)] == "cpu/0" for e in ops)
    assert all(meta[("thread_name", e["pid"], e["tid"])].startswith("mx-engine cpu(0) worker")
               for e in ops)


def _use_every_object():
    """A Task, a Frame and an Event run once, a Counter set to 5 then
    raised by 3, a Marker marked (as make_profiler_reference.py does)."""
    domain = profiler.Domain("mydomain")
    for timed in (domain.new_task("mytask"), domain.new_frame("myframe"),
                  profiler.Event("myevent")):
        timed.start()
        timed.stop()
    counter = domain.new_counter("mycounter", 5)
    counter += 3
    marker = domain.new_marker("mymarker")
    marker.mark()
    return domain, counter, marker


def test_profiling_objects_appear_in_the_trace_as_mxnet_writes_them(fresh):
    profiler.set_state("run")
    domain, counter, marker = _use_every_object()
    counter -= 1
    counter.increment(2)
    counter.decrement()
    counter.set_value(10)
    marker.mark("thread")
    events = _dumped(fresh)
    by_cat = {}
    for e in events:
        if e["ph"] != "M":
            by_cat.setdefault(e["cat"], []).append(e)
    assert [(e["name"], e["ph"]) for e in by_cat["mydomain"] if e["ph"] in "be"] == \
        [("mytask", "b"), ("mytask", "e")]
    assert [e["args"]["mycounter"] for e in by_cat["mydomain"] if e["ph"] == "C"] == \
        [5, 8, 7, 9, 8, 10]
    assert [(e["name"], e["ph"]) for e in by_cat["mydomain,frame"]] == \
        [("myframe", "B"), ("myframe", "E")]
    assert [(e["name"], e["ph"]) for e in by_cat["event"]] == [("myevent", "B"), ("myevent", "E")]
    assert [(e["name"], e["ph"], e["s"]) for e in by_cat["mydomain,instant_marker"]] == \
        [("mymarker", "i", "p"), ("mymarker", "i", "t")]
    rows = {e["pid"]: e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "process_name"}
    assert all(rows[e["pid"]] == cat for cat, evs in by_cat.items() for e in evs)
    stats = json.loads(profiler.dumps(format="json"))["Time"]
    assert stats["mydomain"]["mytask"]["Count"] == 1
    assert stats["mydomain"]["mycounter"]["Count"] == 6
    assert stats["mydomain,frame"]["myframe"]["Count"] == 1
    assert stats["event"]["myevent"]["Count"] == 1
    assert stats["mydomain,instant_marker"] == {}


def test_nothing_recorded_while_stopped_or_paused(fresh):
    domain = profiler.Domain("d")
    task, counter, marker = domain.new_task("t"), domain.new_counter("c"), domain.new_marker("m")

    def everything(tag):
        _naps(tag, 1, 0)
        engine.wait_for_all()
        task.start()
        task.stop()
        counter.increment()
        marker.mark()

    everything("stopped")
    profiler.set_state("run")
    profiler.pause()
    everything("paused")
    task.start()            # started while paused: not recorded when stopped after resume
    profiler.resume()
    task.stop()
    everything("resumed")
    events = [e for e in _dumped(fresh) if e["ph"] != "M"]
    assert [e["name"] for e in events if e["ph"] == "X"] == ["resumed"]
    assert [e["ph"] for e in events if e["name"] == "t"] == ["b", "e"]
    assert [e["args"]["c"] for e in events if e["name"] == "c"] == [3]   # the value still counts
    assert len([e for e in events if e["name"] == "m"]) == 1
    assert profiler.state() == "stop"


def test_dumps_counts_orders_and_resets(fresh):
    profiler.set_state("run")
    _naps("long", 1, 0.03)
    _naps("many", 5, 0.001)
    _naps("mid", 2, 0.008)
    engine.wait_for_all()
    profiler.set_state("stop")

    def order(**kw):
        table = profiler.dumps(**kw)
        return [l.split()[0] for l in table.splitlines() if l.split()[:1] in
                (["long"], ["many"], ["mid"])]

    def counts():
        table = profiler.dumps()
        return {l.split()[0]: int(l.split()[1]) for l in table.splitlines()
                if l.split()[:1] in (["long"], ["many"], ["mid"])}

    assert counts() == {"long": 1, "many": 5, "mid": 2}
    assert order(sort_by="count") == ["many", "mid", "long"]
    assert order(sort_by="count", ascending=True) == ["long", "mid", "many"]
    assert order(sort_by="max") == ["long", "mid", "many"]
    assert order(sort_by="min", ascending=True) == ["many", "mid", "long"]
    assert order(sort_by="avg") == ["long", "mid", "many"]
    assert order() == ["long", "mid", "many"]                 # total: 30 > 16 > 5 ms
    stats = json.loads(profiler.dumps(format="json", sort_by="count"))
    assert list(stats["Time"]["operator"]) == ["many", "mid", "long"]
    assert stats["Time"]["operator"]["many"]["Count"] == 5
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    profiler.dumps(reset=True)
    assert counts() == {}
    assert "operator" not in json.loads(profiler.dumps(format="json"))["Time"]


def _sections(text):
    """{section title: its lines} of an aggregate table."""
    lines = text.split("\n")
    out = {}
    for i, line in enumerate(lines):
        if line == "=================":
            j = lines.index("", i)
            out[lines[i - 1]] = lines[i + 1:j]
    return out


def test_table_layout_is_mxnets(fresh):
    reference = (DATA / "mxnet_profiler_table.txt").read_text()
    profiler.set_state("run")
    _naps("dot", 3, 0)
    engine.wait_for_all()
    _use_every_object()
    profiler.set_state("stop")
    ours = profiler.dumps()
    head = "\nProfile Statistics:\n\tNote the difference in units for different entries.\n"
    assert reference.startswith(head) and ours.startswith(head)
    theirs, mine = _sections(reference), _sections(ours)
    # the categories of what ran here (MXNet adds its C API and memory)
    assert set(mine) - {"Device Storage"} == \
        {"operator", "mydomain", "mydomain,frame", "event", "mydomain,instant_marker"}
    assert list(mine) == sorted(mine, key=lambda t: (t != "Device Storage", t))
    assert list(theirs) == sorted(theirs, key=lambda t: (t != "Device Storage", t))
    for title in mine:
        header, dashes, *rows = mine[title]
        assert (header, dashes) == tuple(theirs[title][:2]), title
        ncols = 5 if "Time" in header else 4
        # right-aligned figures end in the same columns (MXNet's rows with a
        # name of 25 characters or more are shifted; they are not compared)
        their_ends = {tuple(_column_ends(r, ncols)) for r in theirs[title][2:]
                      if r.find("  ") < 25}
        assert len(their_ends) <= 1
        assert bool(rows) == bool(theirs[title][2:]), title      # markers: no rows
        for row in rows:
            assert re.fullmatch(r"\S.{0,23}\s+\d+( +\d+\.\d{4}){%d}" % (ncols - 1), row), row
            if their_ends:
                assert tuple(_column_ends(row, ncols)) in their_ends, row


def _column_ends(row, ncols):
    """Where the count and the figures of a data row end (names may hold
    spaces: 'Memory: cpu/0')."""
    return [m.end() for m in re.finditer(r"\S+", row)][-ncols:]


def test_json_layout_is_mxnets(fresh):
    reference = json.loads((DATA / "mxnet_profiler_stats.json").read_text())
    profiler.set_state("run")
    _naps("dot", 2, 0)
    engine.wait_for_all()
    profiler.Domain("mydomain").new_counter("mycounter", 1)
    profiler.set_state("stop")
    ours = json.loads(profiler.dumps(format="json"))
    assert list(ours) == ["Time", "Unit"] and list(reference) == ["Time", "Memory", "Unit"]
    assert ours["Unit"] == reference["Unit"]
    assert set(ours["Time"]["operator"]["dot"]) == set(reference["Time"]["operator"]["dot"])
    assert set(ours["Time"]["mydomain"]["mycounter"]) == \
        set(reference["Time"]["mydomain"]["mycounter"])
    assert reference["Memory"]["Device Storage"]["Memory: cpu/0"].keys() == \
        {"Count", "Min", "Max", "Avg"}


def test_continuous_dump_writes_while_running(fresh):
    profiler.set_config(continuous_dump=True, dump_period=0.05)
    profiler.set_state("run")
    _naps("early", 1, 0)
    engine.wait_for_all()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if fresh.exists() and "early" in fresh.read_text():
            break
        time.sleep(0.02)
    trace = json.loads(fresh.read_text())          # whole at every write
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["early"]
    assert profiler.state() == "run"
    _naps("late", 1, 0)
    engine.wait_for_all()
    events = _dumped(fresh)                         # finished: everything, once
    assert sorted(e["name"] for e in events if e["ph"] == "X") == ["early", "late"]
    time.sleep(0.2)                                 # the writer has seen its stop
    assert "mx profiler continuous dump" not in [t.name for t in threading.enumerate()]


def test_dump_unfinished_keeps_recording(fresh):
    profiler.set_state("run")
    _naps("a", 1, 0)
    engine.wait_for_all()
    profiler.dump(finished=False)
    assert profiler.state() == "run"
    _naps("b", 1, 0)
    engine.wait_for_all()
    profiler.dump(finished=True)
    assert profiler.state() == "stop"
    names = [e["name"] for e in json.loads(fresh.read_text())["traceEvents"] if e["ph"] == "X"]
    assert sorted(names) == ["a", "b"]


def test_scope_prefixes_operator_names(fresh):
    profiler.set_state("run")
    with profiler.scope("outer"):
        _naps("f", 1, 0)
        with profiler.scope("inner:", append_mode=True):
            _naps("f", 1, 0)
        with profiler.scope("other"):
            _naps("f", 1, 0)
        _naps("f", 1, 0)
    _naps("f", 1, 0)
    with profiler.scope():
        _naps("f", 1, 0)
    engine.wait_for_all()
    assert profiler.aggregate().keys() == {"outer:f", "outer:inner:f", "other:f", "f",
                                            "<unk>:f"}
    assert profiler.aggregate()["outer:f"][0] == 2


def test_set_config_checks_its_arguments_as_mxnet():
    with pytest.raises(MXNetError, match="Cannot find argument 'profile_everything'"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(MXNetError, match="Invalid Parameter format for profile_all expect "
                                         "boolean but value='maybe'"):
        profiler.set_config(profile_all="maybe")
    with pytest.raises(MXNetError, match="dump_period expect float but value='x'"):
        profiler.set_config(dump_period="x")
    with pytest.raises(KeyError, match="profile_process"):
        profiler.set_state("run", profile_process="cloud")
    with pytest.raises(MXNetError, match="distributed kvstore"):
        profiler.pause(profile_process="server")
    with pytest.raises(KeyError, match="state must be 'run' or 'stop', got 'go'"):
        profiler.set_state("go")
    for kw, arg in [({"format": "xml"}, "format"), ({"sort_by": "name"}, "sort_by"),
                    ({"ascending": None}, "ascending"), ({"reset": 2}, "reset")]:
        with pytest.raises(AssertionError, match=f"Invalid value provided for {arg}"):
            profiler.dumps(**kw)
    with pytest.raises(MXNetError, match="Invalid Input: 'galaxy'"):
        profiler.Marker(profiler.Domain("d"), "m").mark("galaxy")
    with pytest.raises(TypeError, match="'domain' must be a profiler.Domain"):
        profiler.Task("d", "t")
    assert profiler.state() == "stop"


def test_deprecated_spellings(fresh, tmp_path):
    with pytest.warns(UserWarning, match="profiler_set_config\\(\\) is deprecated"):
        profiler.profiler_set_config(mode="all", filename=str(tmp_path / "old.json"))
    with pytest.warns(UserWarning, match="profiler_set_state\\(\\) is deprecated"):
        profiler.profiler_set_state("run")
    _naps("old", 1, 0)
    engine.wait_for_all()
    with pytest.warns(UserWarning, match="dump_profile\\(\\) is deprecated"):
        profiler.dump_profile()
    assert profiler.state() == "stop"
    names = [e["name"] for e in json.loads((tmp_path / "old.json").read_text())["traceEvents"]]
    assert "old" in names
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profiler.set_kvstore_handle(None)


def test_dump_before_the_profiler_ever_ran_raises_as_mxnet():
    # In a fresh process: this one's profiler has run already.
    code = ("from mx_engine import profiler\n"
            "from mx_engine.base import MXNetError\n"
            "try:\n"
            "    profiler.dump()\n"
            "except MXNetError as e:\n"
            "    print('raised', 'hasn' in str(e))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "raised True", out.stderr
