"""Exceptions inside functions travel on variables and surface at waits."""
import gc
import sys
import threading
import weakref

import pytest

from mx_engine import MXNetError, _testing, cpu, engine


class Boom(Exception):
    pass


def _raise(rc):
    raise Boom("boom")


def test_error_keeps_type_message_name_and_push_site(any_engine):
    v = engine.new_variable()
    engine.push_sync(_raise, cpu(), mutate_vars=[v], name="exploder")
    line = sys._getframe().f_lineno - 1
    with pytest.raises(Boom) as info:
        engine.wait_for_var(v)
    assert str(info.value) == "boom"
    note, = info.value.__notes__
    assert "'exploder'" in note and f"test_errors.py:{line}" in note
    # the traceback still reaches the line that raised inside the function
    assert any(tb.tb_frame.f_code.co_name == "_raise" for tb in _walk(info.value.__traceback__))


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_dependents_are_skipped_and_carry_the_error(any_engine):
    a, b, c = engine.new_variable(), engine.new_variable(), engine.new_variable()
    ran = []
    engine.push_sync(_raise, cpu(), mutate_vars=[a])
    engine.push_sync(lambda rc: ran.append("b"), cpu(), const_vars=[a], mutate_vars=[b])
    engine.push_sync(lambda rc: ran.append("c"), cpu(), const_vars=[b], mutate_vars=[c])
    engine.push_sync(lambda rc: ran.append("a"), cpu(), mutate_vars=[a])   # writes a: skipped too
    engine.push_sync(lambda rc: ran.append("d"), cpu(), mutate_vars=[engine.new_variable()])
    with pytest.raises(Boom):
        engine.wait_for_all()           # everything has run or been skipped first
    assert ran == ["d"]
    for v in (a, b, c):                 # raised once, so carried by none of them now
        engine.wait_for_var(v)


def test_an_error_raised_once_is_cleared_on_every_variable_that_carried_it(any_engine):
    """MXNet 1.9: the variables a failure reached share one exception
    pointer, and the wait that rethrows it resets that pointer."""
    a, b, c = engine.new_variable(), engine.new_variable(), engine.new_variable()
    engine.push_sync(_raise, cpu(), mutate_vars=[a, b])
    engine.push_sync(lambda rc: None, cpu(), const_vars=[b], mutate_vars=[c])   # skipped: carries it
    with pytest.raises(Boom):
        engine.wait_for_var(c)
    for v in (a, b, c):
        engine.wait_for_var(v)
    engine.wait_for_all()               # not raised a second time


def test_after_an_error_is_raised_new_writes_and_reads_run(any_engine):
    """A failed function's outputs are usable again once its error was seen:
    a later write runs and its readers see the new value (MXNet 1.9's
    `take(..., out=c)` after a failed take)."""
    a, b = engine.new_variable(), engine.new_variable()
    box = {}
    engine.push_sync(_raise, cpu(), mutate_vars=[a])
    engine.push_sync(lambda rc: None, cpu(), const_vars=[a], mutate_vars=[b])
    with pytest.raises(Boom):
        engine.wait_for_var(b)
    engine.push_sync(lambda rc: box.update(a=1), cpu(), mutate_vars=[a])
    engine.push_sync(lambda rc: box.update(b=box["a"] + 1), cpu(), const_vars=[a],
                     mutate_vars=[b])
    engine.wait_for_var(b)
    assert box == {"a": 1, "b": 2}


def test_a_dependent_not_started_when_the_error_is_raised_runs(threaded_engine):
    """A reader of a failed variable that has not started when a wait
    raises the error runs (the error is no longer anybody's), as in MXNet,
    which checks the shared exception pointer when the function starts."""
    a, gate_var, out = engine.new_variable(), engine.new_variable(), engine.new_variable()
    gate = threading.Event()
    ran = []
    engine.push_sync(lambda rc: gate.wait(30), cpu(), mutate_vars=[gate_var])
    engine.push_sync(_raise, cpu(), mutate_vars=[a])
    engine.push_sync(lambda rc: ran.append(1), cpu(), const_vars=[a, gate_var],
                     mutate_vars=[out])
    with pytest.raises(Boom):
        engine.wait_for_var(a)
    gate.set()
    engine.wait_for_var(out)            # no error: it ran
    assert ran == [1]


def test_wait_for_all_raises_the_first_error_and_clears_all(any_engine):
    a, b = engine.new_variable(), engine.new_variable()
    engine.push_sync(lambda rc: (_ for _ in ()).throw(ValueError("first")), cpu(), mutate_vars=[a])
    engine.wait_for_all.__doc__  # noqa: B018  (keep the two failures ordered)
    engine.push_sync(lambda rc: (_ for _ in ()).throw(KeyError("second")), cpu(),
                     const_vars=[a], mutate_vars=[b])
    engine.push_sync(lambda rc: (_ for _ in ()).throw(KeyError("third")), cpu(),
                     mutate_vars=[engine.new_variable()])
    with pytest.raises(ValueError, match="first"):
        engine.wait_for_all()
    engine.wait_for_var(a)
    engine.wait_for_var(b)
    engine.wait_for_all()


def test_engine_is_fully_usable_after_errors(any_engine):
    v = engine.new_variable()
    engine.push_sync(_raise, cpu(), mutate_vars=[v])
    with pytest.raises(Boom):
        engine.wait_for_all()
    out = []
    engine.push_sync(lambda rc: out.append(1), cpu(), mutate_vars=[v])
    engine.wait_for_var(v)
    assert out == [1]


def test_native_failure_names_function_and_site(any_engine):
    v = engine.new_variable()
    _testing.push_fail(cpu(), writes=[v], message="disk on fire")
    with pytest.raises(MXNetError, match="'native_fail' pushed at .*test_errors.py:\\d+ "
                                         "failed: disk on fire"):
        engine.wait_for_var(v)


def test_async_failure_paths(any_engine):
    v = engine.new_variable()
    engine.push_async(lambda rc, done: done(Boom("reported")), cpu(), mutate_vars=[v])
    with pytest.raises(Boom, match="reported"):
        engine.wait_for_var(v)
    engine.push_async(lambda rc, done: done("as text"), cpu(), mutate_vars=[v])
    with pytest.raises(MXNetError, match="as text"):
        engine.wait_for_var(v)
    engine.push_async(_raise_before_complete, cpu(), mutate_vars=[v])
    with pytest.raises(Boom):
        engine.wait_for_var(v)
    twice = []
    returned = threading.Event()

    def call_twice(rc, done):
        done()          # the function is complete from here on; it goes on running
        try:
            done()
        except MXNetError as exc:
            twice.append(str(exc))
        returned.set()

    engine.push_async(call_twice, cpu(), mutate_vars=[v])
    engine.wait_for_var(v)
    assert returned.wait(10)
    assert twice and "called twice" in twice[0]


def _raise_before_complete(rc, on_complete):
    raise Boom("before on_complete")


def test_waiting_inside_a_function_is_refused(threaded_engine):
    v, w = engine.new_variable(), engine.new_variable()
    engine.push_sync(lambda rc: engine.wait_for_var(w), cpu(), mutate_vars=[v])
    with pytest.raises(MXNetError, match="inside an engine function"):
        engine.wait_for_var(v)


def test_bulk_failure_skips_the_rest_and_marks_every_written_var():
    a, b = engine.new_variable(), engine.new_variable()
    ran = []
    with engine.bulk(8):
        engine.push_sync(lambda rc: ran.append(1), cpu(), mutate_vars=[a])
        engine.push_sync(_raise, cpu(), mutate_vars=[a])
        engine.push_sync(lambda rc: ran.append(3), cpu(), mutate_vars=[b])
    with pytest.raises(Boom):
        engine.wait_for_var(b)
    engine.wait_for_var(a)              # the batch's one error, raised once
    assert ran == [1]


@pytest.mark.timeout(60)
def test_bulk_functions_without_variables(any_engine):
    """A thread's first bulked function may use no variable at all (this
    aborted the process: a zero-sized realloc)."""
    ran = []
    with engine.bulk(16):
        engine.push_sync(lambda rc: ran.append(0), cpu())
        for i in range(1, 40):
            engine.push_sync(lambda rc, i=i: ran.append(i), cpu())
    engine.wait_for_all()
    assert sorted(ran) == list(range(40))


def test_ten_thousand_failures_leave_memory_flat(any_engine):
    """Exceptions, their tracebacks and the engine's records are all freed."""
    refs = []
    vars_ = [engine.new_variable() for _ in range(100)]

    def fail(rc, i):
        exc = Boom(i)
        refs.append(weakref.ref(exc))
        raise exc

    def round_():
        for i in range(10_000):
            engine.push_sync(lambda rc, i=i: fail(rc, i), cpu(), mutate_vars=[vars_[i % 100]])
        with pytest.raises(Boom):
            engine.wait_for_all()

    round_()
    gc.collect()
    rss0 = _rss_bytes()
    for _ in range(3):
        round_()
    gc.collect()
    from mx_engine._engine import _debug_counts
    counts = _debug_counts()
    assert counts["pending_errors"] == 0 and counts["graveyard"] == 0, counts
    assert all(r() is None for r in refs), "exceptions kept alive by the engine"
    assert _rss_bytes() - rss0 < 16 << 20


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.parametrize("call, exc, text", [
    (lambda v: engine.push_sync(42, cpu(), mutate_vars=[v]), TypeError,
     "push_sync: argument 'fn' must be callable, got int"),
    (lambda v: engine.push_sync(lambda rc: None, "cpu", mutate_vars=[v]), TypeError,
     "push_sync: argument 'ctx' must be a Context such as cpu(0), got str 'cpu'"),
    (lambda v: engine.push_async(lambda rc, d: d(), cpu(), mutate_vars=[v, 3]), TypeError,
     "push_async: argument 'mutate_vars' must hold Var objects, item 1 is int"),
    (lambda v: engine.push_sync(lambda rc: None, cpu(), const_vars=5), TypeError,
     "argument 'const_vars' must be a sequence of Var, got int"),
    (lambda v: engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v], prop=17), ValueError,
     "push_sync: argument 'prop' must be an FnProperty, got 17"),
    (lambda v: engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v], name=3), TypeError,
     "argument 'name' must be a str"),
    (lambda v: engine.wait_for_var("v"), TypeError,
     "wait_for_var: argument 'var' must be a Var, got str"),
    (lambda v: engine.set_bulk_size(0), ValueError, "'size' must be >= 1, got 0"),
])
def test_bad_input_is_a_clear_error_at_the_call(call, exc, text):
    v = engine.new_variable()
    with pytest.raises(exc) as info:
        call(v)
    assert text in str(info.value)


@pytest.mark.parametrize("env, text", [
    ({"MXNET_CPU_WORKER_NTHREADS": "-2"}, "MXNET_CPU_WORKER_NTHREADS must be >= 1, got -2"),
    ({"MXNET_GPU_COPY_NTHREADS": "two"}, "MXNET_GPU_COPY_NTHREADS must be an integer, got 'two'"),
    ({"MXNET_ENGINE_TYPE": "TurboEngine"}, "MXNET_ENGINE_TYPE must be one of"),
    ({"MXNET_ENGINE_WATCHDOG_SECONDS": "-1"}, "MXNET_ENGINE_WATCHDOG_SECONDS must be >= 0"),
])
def test_bad_environment_is_a_clear_error_at_start(restart, monkeypatch, env, text):
    for k, val in env.items():
        monkeypatch.setenv(k, val)
    engine.stop()
    with pytest.raises(ValueError) as info:
        engine.push_sync(lambda rc: None, cpu(), mutate_vars=[engine.new_variable()])
    assert text in str(info.value)
    monkeypatch.undo()
    out = []
    engine.push_sync(lambda rc: out.append(1), cpu(), mutate_vars=[engine.new_variable()])
    engine.wait_for_all()
    assert out == [1]
