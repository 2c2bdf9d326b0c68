"""Backpressure (MXNET_ENGINE_MAX_INFLIGHT) never stops a thread that the
functions in flight are waiting for: a thread that completes a push_async
function, and pushes first, goes on even when the limit is reached.

Each test is bounded in time: a hang fails it (and dumps what is pending)
instead of hanging the suite."""
import threading

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from mx_engine import cpu, engine

ENGINE_TYPES = ["ThreadedEnginePerDevice", "ThreadedEnginePooled", "NaiveEngine"]


def _finish(thread, seconds):
    thread.join(seconds)
    if thread.is_alive():
        pending = engine.dump_pending()
        pytest.fail(f"hung for {seconds} s; pending:\n{pending[:4000]}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine_type", ENGINE_TYPES)
def test_a_helper_thread_that_pushes_then_completes_is_not_held_back(restart, engine_type):
    """The issue's case: an async function completed by a helper thread that
    pushes first, behind more dependents than the limit allows in flight."""
    restart(engine_type, MXNET_ENGINE_MAX_INFLIGHT=16)
    v, w = engine.new_variable("v"), engine.new_variable("w")
    log = []

    def start(rc, on_complete):
        def helper():
            for i in range(50):
                engine.push_sync(lambda rc, i=i: log.append(("w", i)), cpu(), mutate_vars=[w])
            on_complete()
        threading.Thread(target=helper, name="completer").start()

    def main():
        engine.push_async(start, cpu(), mutate_vars=[v])
        for i in range(200):
            engine.push_sync(lambda rc, i=i: log.append(("v", i)), cpu(), mutate_vars=[v])
        engine.wait_for_all()

    t = threading.Thread(target=main)
    t.start()
    _finish(t, 60)
    assert [i for k, i in log if k == "v"] == list(range(200))
    assert [i for k, i in log if k == "w"] == list(range(50))


@pytest.mark.timeout(120)
def test_the_limit_still_holds_while_work_runs(restart):
    """While functions run or are ready, a pusher still waits at the limit."""
    restart(MXNET_ENGINE_MAX_INFLIGHT=32)
    gate = threading.Event()
    v = engine.new_variable()
    engine.push_sync(lambda rc: gate.wait(30), cpu(), mutate_vars=[v])    # running
    counts = []

    def pusher():
        for _ in range(500):
            engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v])
            counts.append(engine.num_pending())

    t = threading.Thread(target=pusher)
    t.start()
    t.join(0.5)
    assert t.is_alive() and engine.num_pending() <= 33
    gate.set()
    _finish(t, 60)
    engine.wait_for_all()
    assert max(counts) <= 34


# A program: steps run by the main thread.  ("sync", var, n): n functions
# writing a main variable.  ("async", var, m, hvar): an async function on a
# main variable, completed by a helper thread that first pushes m functions
# writing a helper variable of its own.
_steps = st.one_of(
    st.tuples(st.just("sync"), st.integers(0, 2), st.integers(1, 30)),
    st.tuples(st.just("async"), st.integers(0, 2), st.integers(0, 20), st.integers(0, 1)),
)


@pytest.mark.timeout(300)
# No shrinking: once the engine hangs, every further example would too.
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(engine_type=st.sampled_from(ENGINE_TYPES), limit=st.sampled_from([1, 2, 4, 64]),
       program=st.lists(_steps, min_size=1, max_size=12))
def test_random_mixes_of_async_completions_and_backpressure_finish_in_order(
        restart, engine_type, limit, program):
    restart(engine_type, MXNET_ENGINE_MAX_INFLIGHT=limit)
    main_vars = [engine.new_variable(f"m{i}") for i in range(3)]
    helper_vars = [engine.new_variable(f"h{i}") for i in range(2)]
    log = {i: [] for i in range(5)}
    helpers = []
    helper_lock = [threading.Lock() for _ in helper_vars]
    expected = {i: [] for i in range(5)}

    def run():
        seq = 0
        for step in program:
            if step[0] == "sync":
                _, var, n = step
                for _ in range(n):
                    seq += 1
                    expected[var].append(seq)
                    engine.push_sync(lambda rc, s=seq, var=var: log[var].append(s), cpu(),
                                     mutate_vars=[main_vars[var]])
            else:
                _, var, m, hvar = step
                seq += 1
                expected[var].append(seq)

                def start(rc, on_complete, s=seq, var=var, m=m, hvar=hvar):
                    log[var].append(s)

                    def helper():
                        with helper_lock[hvar]:     # one pushing helper per variable
                            for k in range(m):
                                engine.push_sync(lambda rc, k=k: log[3 + hvar].append(k), cpu(),
                                                 mutate_vars=[helper_vars[hvar]])
                        on_complete()
                    t = threading.Thread(target=helper)
                    helpers.append(t)
                    t.start()
                engine.push_async(start, cpu(), mutate_vars=[main_vars[var]])
        engine.wait_for_all()

    t = threading.Thread(target=run)
    t.start()
    _finish(t, 20)
    for h in helpers:
        _finish(h, 10)
    engine.wait_for_all()
    for var in range(3):
        assert log[var] == expected[var]
    for hvar in range(2):
        pushed = sum(s[2] for s in program if s[0] == "async" and s[3] == hvar)
        assert len(log[3 + hvar]) == pushed
