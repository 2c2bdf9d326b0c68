"""Randomised programs: every engine type, several pushing threads and real
parallelism must give NaiveEngine's results; nothing deadlocks."""
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mx_engine import _testing, cpu, engine

NVARS = 24


def random_program(seed, nops, nvars=NVARS):
    rng = random.Random(seed)
    ops = []
    for i in range(nops):
        k = rng.randint(0, 4)
        chosen = rng.sample(range(nvars), k=min(nvars, k + 1))
        nw = rng.randint(0 if len(chosen) > 1 else 1, len(chosen))
        ops.append((i, sorted(chosen[nw:]), sorted(chosen[:nw])))
    return ops


def run_native(ops, nvars=NVARS, ctx_of=lambda i: cpu()):
    """Pushes slot ops (GIL-free, truly parallel) and returns the final slots."""
    table = _testing.SlotTable(nvars)
    vars_ = [engine.new_variable() for _ in range(nvars)]
    for i, reads, writes in ops:
        table.push_op(ctx_of(i), i, reads, writes, [vars_[j] for j in reads],
                      [vars_[j] for j in writes])
    engine.wait_for_all()
    return table.values()


def reference(ops, nvars=NVARS):
    table = _testing.SlotTable(nvars)
    for i, reads, writes in ops:
        table.run_op(i, reads, writes)
    return table.values()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_native_programs_match_sequential_order(any_engine, seed):
    ops = random_program(seed, 4000)
    assert run_native(ops) == reference(ops)


def test_random_programs_across_devices_and_pools(threaded_engine):
    ops = random_program(7, 3000)
    assert run_native(ops, ctx_of=lambda i: cpu(i % 3)) == reference(ops)


def run_python(ops, nvars=NVARS):
    """The same programs as Python callables recording what each read."""
    state = list(range(nvars))
    seen = {}
    vars_ = [engine.new_variable() for _ in range(nvars)]

    def op(rc, i, reads, writes):
        seen[i] = tuple(state[j] for j in reads + writes)
        for j in writes:
            state[j] = hash((i, seen[i], state[j]))

    for i, reads, writes in ops:
        engine.push_sync(lambda rc, a=(i, reads, writes): op(rc, *a), cpu(),
                         const_vars=[vars_[j] for j in reads],
                         mutate_vars=[vars_[j] for j in writes])
    engine.wait_for_all()
    return state, seen


def test_random_python_programs_equal_naive_engine(threaded_engine):
    ops = random_program(11, 2000)
    result = run_python(ops)
    engine.set_engine_type("NaiveEngine")
    try:
        assert run_python(ops) == result
    finally:
        engine.set_engine_type(threaded_engine)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=3),
                          st.lists(st.integers(0, 5), min_size=1, max_size=3)),
                min_size=1, max_size=60))
def test_property_any_program_runs_in_a_valid_order(program):
    ops = [(i, sorted(set(r) - set(w)), sorted(set(w))) for i, (r, w) in enumerate(program)]
    assert run_native(ops, nvars=6) == reference(ops, nvars=6)


def test_several_python_threads_push_and_wait(any_engine):
    """Each thread's own chain stays ordered; the shared variable sees every
    function exactly once; results equal a NaiveEngine run's."""
    shared = engine.new_variable("shared")
    total = []
    per_thread = {}
    errors = []

    def pusher(t):
        mine = engine.new_variable()
        out = per_thread[t] = []
        try:
            for i in range(300):
                engine.push_sync(lambda rc, i=i: out.append(i), cpu(), mutate_vars=[mine])
                engine.push_sync(lambda rc, i=i: total.append((t, i)), cpu(),
                                 const_vars=[mine], mutate_vars=[shared])
                if i % 50 == 0:
                    engine.wait_for_var(mine)
            engine.wait_for_var(shared)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=pusher, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    engine.wait_for_all()
    assert not errors
    assert all(per_thread[t] == list(range(300)) for t in range(4))
    assert sorted(total) == [(t, i) for t in range(4) for i in range(300)]
    for t in range(4):      # each thread's writes to `shared` kept their order
        assert [i for (tt, i) in total if tt == t] == list(range(300))


@pytest.mark.timeout(120)
def test_no_deadlock_with_ten_thousand_functions_and_sixteen_workers(restart):
    restart(MXNET_CPU_WORKER_NTHREADS=16, MXNET_CPU_PRIORITY_NTHREADS=4)
    ops = random_program(5, 10_000, nvars=32)
    assert run_native(ops, nvars=32) == reference(ops, nvars=32)
    out = []
    vs = [engine.new_variable() for _ in range(32)]
    for i in range(10_000):
        engine.push_sync(lambda rc, i=i: out.append(i), cpu(),
                         const_vars=[vs[(i * 7) % 32]], mutate_vars=[vs[i % 32]])
    engine.wait_for_all()
    assert sorted(out) == list(range(10_000))


def test_gil_free_functions_overlap_in_time(threaded_engine):
    """Two native functions meet at a barrier that only succeeds if both run
    at once; a failure would surface at the wait."""
    for _ in range(3):
        rv = _testing.Rendezvous(2, timeout=20)
        rv.push(cpu(), writes=[engine.new_variable()])
        rv.push(cpu(), writes=[engine.new_variable()])
        engine.wait_for_all()
    record = _testing.Intervals(2)
    _testing.push_sleep(cpu(), 0.2, writes=[engine.new_variable()], record=record, slot=0)
    _testing.push_sleep(cpu(), 0.2, writes=[engine.new_variable()], record=record, slot=1)
    engine.wait_for_all()
    (s0, e0), (s1, e1) = record.get(0), record.get(1)
    assert s0 < e1 and s1 < e0, "independent sleeps did not overlap"


def test_conflicting_functions_never_overlap(threaded_engine):
    record = _testing.Intervals(4)
    v = engine.new_variable()
    for slot in range(4):
        _testing.push_sleep(cpu(), 0.01, writes=[v], record=record, slot=slot)
    engine.wait_for_all()
    spans = sorted(record.get(i) for i in range(4))
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(3))


def test_backpressure_bounds_functions_in_flight(restart):
    restart(MXNET_ENGINE_MAX_INFLIGHT=64)
    gate = threading.Event()
    v = engine.new_variable()
    engine.push_sync(lambda rc: gate.wait(30), cpu(), mutate_vars=[v])
    peak = []

    def pusher():
        for i in range(2000):
            engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v])
            peak.append(engine.num_pending())

    t = threading.Thread(target=pusher)
    t.start()
    t.join(0.5)
    assert t.is_alive(), "the pusher should block: the worker holds v"
    assert engine.num_pending() <= 65
    gate.set()
    t.join(60)
    engine.wait_for_all()
    assert len(peak) == 2000 and max(peak) <= 66


def test_a_million_native_pushes_without_waiting_stay_bounded(restart):
    restart(MXNET_ENGINE_MAX_INFLIGHT=4096)
    v = engine.new_variable()
    from mx_engine._engine import _debug_counts
    for _ in range(10):
        _testing.push_noop_chain(v, cpu(), 100_000)
        assert _debug_counts()["blocks"] <= 4096 + 1
    engine.wait_for_all()
    assert v.version == 1_000_000
