"""The engine's guarantee: functions that conflict on a variable run in push
order; readers of a variable may run together."""
import threading
import time

import pytest

from mx_engine import cpu, engine
from mx_engine.engine import FnProperty


def test_writes_run_in_push_order(any_engine):
    v = engine.new_variable("v")
    out = []
    for i in range(200):
        engine.push_sync(lambda rc, i=i: out.append(i), cpu(), mutate_vars=[v])
    engine.wait_for_var(v)
    assert out == list(range(200))
    assert v.version == 200


def test_read_waits_for_earlier_write_and_write_for_earlier_reads(any_engine):
    v = engine.new_variable()
    state = {"x": 0}
    log = []

    def slow_write(rc):
        time.sleep(0.05)
        state["x"] = 1

    def read(rc):
        log.append(("read", state["x"]))
        time.sleep(0.02)

    engine.push_sync(slow_write, cpu(), mutate_vars=[v])
    engine.push_sync(read, cpu(), const_vars=[v])
    engine.push_sync(read, cpu(), const_vars=[v])
    engine.push_sync(lambda rc: state.update(x=2), cpu(), mutate_vars=[v])
    engine.push_sync(read, cpu(), const_vars=[v])
    engine.wait_for_all()
    assert log == [("read", 1), ("read", 1), ("read", 2)]


def test_readers_of_one_variable_run_concurrently(threaded_engine):
    v = engine.new_variable()
    barrier = threading.Barrier(2, timeout=10)
    engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v])
    for _ in range(2):    # each waits (GIL released) until the other runs too
        engine.push_sync(lambda rc: barrier.wait(), cpu(), const_vars=[v])
    engine.wait_for_all()
    assert barrier.n_waiting == 0 and not barrier.broken


def test_independent_variables_do_not_wait_for_each_other(threaded_engine):
    a, b = engine.new_variable(), engine.new_variable()
    gate = threading.Event()
    engine.push_sync(lambda rc: gate.wait(10), cpu(), mutate_vars=[a])
    done = threading.Event()
    engine.push_sync(lambda rc: done.set(), cpu(), mutate_vars=[b])
    engine.wait_for_var(b)           # returns while a's function still blocks
    assert done.is_set() and engine.num_pending() == 1
    gate.set()
    engine.wait_for_var(a)


def test_wait_for_var_waits_only_for_writes_pushed_before(threaded_engine):
    v = engine.new_variable()
    done = []
    engine.push_sync(lambda rc: (time.sleep(0.05), done.append(1)), cpu(), mutate_vars=[v])
    engine.wait_for_var(v)
    assert done == [1]
    gate = threading.Event()
    engine.push_sync(lambda rc: gate.wait(10), cpu(), const_vars=[v])
    engine.wait_for_var(v)           # a pending read does not block a wait
    gate.set()


def test_duplicates_are_dropped_and_a_var_in_both_lists_is_written(any_engine):
    v = engine.new_variable()
    order = []
    engine.push_sync(lambda rc: (time.sleep(0.03), order.append("both")), cpu(),
                     const_vars=[v, v], mutate_vars=[v, v])
    engine.push_sync(lambda rc: order.append("reader"), cpu(), const_vars=[v, v])
    engine.wait_for_all()
    assert order == ["both", "reader"]       # the reader waited: it was a write
    assert v.version == 1                    # one write, not two


def test_run_context_names_the_push_context(any_engine):
    seen = []
    engine.push_sync(lambda rc: seen.append(rc.ctx), cpu(1), mutate_vars=[engine.new_variable()])
    engine.wait_for_all()
    assert seen == [cpu(1)]


def test_priority_orders_ready_functions(restart):
    restart(MXNET_CPU_WORKER_NTHREADS=1)
    gate = threading.Event()
    order = []
    engine.push_sync(lambda rc: gate.wait(10), cpu(), mutate_vars=[engine.new_variable()])
    for p in [0, 5, -3, 9, 1]:
        engine.push_sync(lambda rc, p=p: order.append(p), cpu(),
                         mutate_vars=[engine.new_variable()], priority=p)
    gate.set()
    engine.wait_for_all()
    assert order == [9, 5, 1, 0, -3]


def test_operator_pushes_repeatedly_and_retires(any_engine):
    v = engine.new_variable()
    out = []
    op = engine.new_operator(lambda rc: out.append(len(out)), mutate_vars=[v], name="counter")
    for _ in range(50):
        engine.push(op, cpu())
    engine.wait_for_var(v)
    assert out == list(range(50))
    engine.delete_operator(op)
    with pytest.raises(ValueError, match="deleted by delete_operator"):
        engine.push(op, cpu())


def test_async_operator(threaded_engine):
    v = engine.new_variable()
    out = []

    def fn(rc, on_complete):
        threading.Timer(0.01, lambda: (out.append(1), on_complete())).start()

    op = engine.new_operator(fn, mutate_vars=[v], is_async=True)
    engine.push(op, cpu())
    engine.push_sync(lambda rc: out.append(2), cpu(), const_vars=[v])
    engine.wait_for_all()
    assert out == [1, 2]


def test_push_async_holds_variables_until_on_complete(any_engine):
    v = engine.new_variable()
    out = []
    threads = []

    def fn(rc, on_complete):
        def later():
            time.sleep(0.05)
            out.append("async")
            on_complete()
        t = threading.Thread(target=later)
        threads.append(t)
        t.start()

    engine.push_async(fn, cpu(), mutate_vars=[v])
    engine.push_sync(lambda rc: out.append("after"), cpu(), const_vars=[v])
    engine.wait_for_all()
    assert out == ["async", "after"]
    for t in threads:
        t.join()


def test_native_async_completed_from_another_thread(threaded_engine):
    from mx_engine import _testing
    _testing.reset_parked()
    v = engine.new_variable()
    out = []
    _testing.push_parked_async(cpu(), writes=[v])
    engine.push_sync(lambda rc: out.append(1), cpu(), const_vars=[v])
    deadline = time.monotonic() + 10
    while _testing.num_parked() < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert out == [] and engine.num_pending() == 2
    t = threading.Thread(target=_testing.complete_parked, args=(0,))
    t.start()
    t.join()
    engine.wait_for_all()
    assert out == [1]


def test_async_property_runs_in_the_pushing_thread_when_ready(threaded_engine):
    v = engine.new_variable()
    where = []
    engine.push_sync(lambda rc: where.append(threading.current_thread()), cpu(),
                     mutate_vars=[v], prop=FnProperty.ASYNC)
    engine.wait_for_all()
    assert where == [threading.current_thread()]


def test_delete_variable_runs_after_pending_uses(any_engine):
    v = engine.new_variable()
    out = []
    engine.push_sync(lambda rc: (time.sleep(0.02), out.append("use")), cpu(), const_vars=[v])
    engine.delete_variable(lambda rc: out.append("deleted"), cpu(), v)
    engine.wait_for_all()
    assert out == ["use", "deleted"]
    assert v.deleted
    for call in (lambda: engine.push_sync(lambda rc: None, cpu(), const_vars=[v]),
                 lambda: engine.wait_for_var(v),
                 lambda: engine.delete_variable(None, cpu(), v)):
        with pytest.raises(ValueError, match="was deleted by delete_variable"):
            call()


def test_dropping_a_var_frees_it_after_its_uses(any_engine):
    out = []
    v = engine.new_variable()
    engine.push_sync(lambda rc: (time.sleep(0.02), out.append(1)), cpu(), mutate_vars=[v])
    del v                        # freed by the engine once the write is done
    engine.wait_for_all()
    assert out == [1]


@pytest.mark.parametrize("prop, ctx, pool", [
    (FnProperty.NORMAL, "cpu(1)", "mx-engine cpu(1) worker"),
    (FnProperty.CPU_PRIORITIZED, "cpu(0)", "mx-engine cpu priority worker"),
    (FnProperty.NORMAL, "gpu(0)", "mx-engine gpu(0) worker"),
    (FnProperty.COPY_TO_GPU, "gpu(0)", "mx-engine gpu(0) copy worker"),
    (FnProperty.COPY_FROM_GPU, "gpu(1)", "mx-engine gpu(1) copy worker"),
    (FnProperty.GPU_PRIORITIZED, "gpu(0)", "mx-engine gpu(0) priority worker"),
])
def test_per_device_pools(prop, ctx, pool):
    from mx_engine import Context
    dev, i = ctx.rstrip(")").split("(")
    names = []
    engine.push_sync(lambda rc: names.append(threading.current_thread().name),
                     Context(dev, int(i)), mutate_vars=[engine.new_variable()], prop=prop)
    engine.wait_for_all()
    assert names[0].startswith(pool), names


def test_pooled_engine_uses_a_shared_pool_and_an_io_pool():
    from mx_engine import gpu
    engine.set_engine_type("ThreadedEnginePooled")
    try:
        names = []
        for ctx, prop in [(cpu(3), FnProperty.NORMAL), (gpu(0), FnProperty.NORMAL),
                          (gpu(0), FnProperty.COPY_FROM_GPU)]:
            engine.push_sync(lambda rc: names.append(threading.current_thread().name),
                             ctx, mutate_vars=[engine.new_variable()], prop=prop)
            engine.wait_for_all()
        assert [n.rsplit(" worker", 1)[0] for n in names] == [
            "mx-engine pooled", "mx-engine pooled", "mx-engine pooled io"]
    finally:
        engine.set_engine_type("ThreadedEnginePerDevice")


def test_bulk_batches_functions_and_keeps_order():
    from mx_engine import profiler
    v, w = engine.new_variable(), engine.new_variable()
    out = []
    profiler.aggregate(reset=True)
    profiler.set_state("run")
    try:
        with engine.bulk(4):
            for i in range(10):
                engine.push_sync(lambda rc, i=i: out.append(i), cpu(),
                                 const_vars=[w], mutate_vars=[v], name=f"f{i}")
        engine.wait_for_all()
    finally:
        profiler.set_state("stop")
    stats = profiler.aggregate(reset=True)
    assert out == list(range(10))
    # 4 + 4 + 2 functions, three blocks, named as MXNet names a bulked segment
    assert {k: s[0] for k, s in stats.items()} == {"[f0,f1,f2,f3]": 1, "[f4,f5,f6,f7]": 1,
                                                   "[f8,f9]": 1}
    assert v.version == 3 and w.version == 0


def test_bulk_flushes_before_a_wait_and_on_context_change():
    v = engine.new_variable()
    out = []
    with engine.bulk(100):
        engine.push_sync(lambda rc: out.append("a"), cpu(0), mutate_vars=[v])
        engine.wait_for_var(v)
        assert out == ["a"]
        engine.push_sync(lambda rc: out.append("b"), cpu(0), mutate_vars=[v])
        engine.push_sync(lambda rc: out.append("c"), cpu(1), mutate_vars=[v])
    engine.wait_for_all()
    assert out == ["a", "b", "c"]


def test_delete_var_then_calls_back_after_pending_uses(any_engine):
    from mx_engine import _testing
    before = _testing.freed()
    v = engine.new_variable()
    _testing.push_sleep(cpu(), 0.05, writes=[v])
    _testing.delete_then_count(v)
    if any_engine != "NaiveEngine":
        assert _testing.freed() == before          # the sleep still holds v
    engine.wait_for_all()
    assert _testing.freed() == before + 1
    idle = engine.new_variable()
    _testing.delete_then_count(idle)                # idle: at once
    assert _testing.freed() == before + 2
