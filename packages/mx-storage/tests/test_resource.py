import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mx_engine import _testing, cpu, engine, gpu
from mx_storage import resource
from mx_storage.resource import ResourceRequest


def draw(res, kind, shape, **kw):
    """Pushes a draw the way an operator does: the resource var is mutated."""
    out = {}

    def fn(rc):
        out["x"] = getattr(res, kind)(shape=shape, **kw)

    engine.push_sync(fn, cpu(), mutate_vars=[res.var])
    engine.wait_for_var(res.var)
    return out["x"]


def test_temp_space_copies_are_handed_out_in_turn_and_grow():
    ctx = cpu(2)
    first = [resource.request(ctx, ResourceRequest.TEMP_SPACE) for _ in range(4)]
    assert len({id(r) for r in first}) == 4 and len({r.var.id for r in first}) == 4
    assert resource.request(ctx, ResourceRequest.TEMP_SPACE) is first[0]
    ws = first[1]
    a = ws.get_space((10, 10), np.float64)
    assert a.shape == (10, 10) and ws.nbytes == 800
    a[:] = 1.0
    b = ws.get_space(50, np.float32)             # fits: reused, no growth
    assert ws.nbytes == 800 and b.ctypes.data == a.ctypes.data
    c = ws.get_space(300, np.float32)            # grows (at least doubles)
    assert ws.nbytes == 1600 and c.shape == (300,)
    a[:] = 2.0                                   # the old block lives while `a` does


def test_a_pushed_call_keeps_its_block_across_growth_and_release():
    import mx_storage as st
    ws = resource.request(cpu(3), ResourceRequest.TEMP_SPACE)
    held = ws.block(1000)                       # what a pushed kernel holds
    assert held.size >= 1000 and ws.block(500) is held
    bigger = ws.block(5000)                     # a later call needs more
    assert bigger is not held and bigger.size >= 5000 and held.live
    ws.release()
    assert ws.nbytes == 0 and bigger.live       # freed when its holder drops it
    before = st.memory_stats(cpu(3))["in_use"]
    del bigger
    assert st.memory_stats(cpu(3))["in_use"] < before
    resource.release_workspaces(cpu(3))
    assert ws.nbytes == 0


def test_functions_sharing_a_workspace_never_overlap():
    ws = resource.request(cpu(3), ResourceRequest.TEMP_SPACE)
    record = _testing.Intervals(4)
    for slot in range(4):    # the workspace var serialises them
        _testing.push_sleep(cpu(3), 0.01, writes=[ws.var], record=record, slot=slot)
    engine.wait_for_all()
    spans = sorted(record.get(i) for i in range(4))
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(3))


def test_seeded_draws_repeat_and_different_seeds_differ():
    rng = resource.request(cpu(), ResourceRequest.RANDOM)
    resource.seed(42)
    a = draw(rng, "uniform", (1000,))
    b = draw(rng, "normal", (1000,), dtype=np.float64)
    c = draw(rng, "randint", (1000,), low=-5, high=5)
    resource.seed(42)
    assert np.array_equal(draw(rng, "uniform", (1000,)), a)
    assert np.array_equal(draw(rng, "normal", (1000,), dtype=np.float64), b)
    assert np.array_equal(draw(rng, "randint", (1000,), low=-5, high=5), c)
    resource.seed(43)
    assert not np.array_equal(draw(rng, "uniform", (1000,)), a)
    assert 0 <= a.min() and a.max() < 1 and c.min() >= -5 and c.max() < 5
    assert abs(b.mean()) < 0.2 and abs(b.std() - 1) < 0.1


def test_devices_and_copies_draw_unrelated_streams():
    resource.seed(7)
    x = draw(resource.request(cpu(0), ResourceRequest.RANDOM), "uniform", 64)
    y = draw(resource.request(cpu(1), ResourceRequest.RANDOM), "uniform", 64)
    assert not np.array_equal(x, y)


def test_parallel_random_is_the_same_for_any_number_of_threads():
    pr = resource.request(cpu(), ResourceRequest.PARALLEL_RANDOM)
    results = []
    for nthreads in (1, 2, 5):
        resource.seed(11)
        results.append(draw(pr, "normal", (999,), nthreads=nthreads))
    assert all(np.array_equal(results[0], r) for r in results[1:])


def test_seed_restarts_the_turn_of_random_copies(monkeypatch):
    # Several PARALLEL_RANDOM copies (a GPU has 4): the requests after a
    # reseed get the copies of the requests after the previous one.
    monkeypatch.setenv("MXNET_CPU_PARALLEL_RAND_COPY", "3")
    ctx = cpu(12)
    resource.seed(8)
    first = [resource.request(ctx, ResourceRequest.PARALLEL_RANDOM).reserve(4) for _ in range(2)]
    resource.seed(8)
    again = [resource.request(ctx, ResourceRequest.PARALLEL_RANDOM).reserve(4) for _ in range(2)]
    assert first == again and first[0][0] != first[1][0]


def test_seed_of_one_device_applies_to_its_later_resources():
    resource.seed(5, ctx=cpu(9))
    a = draw(resource.request(cpu(9), ResourceRequest.RANDOM), "uniform", 16)
    resource.seed(5, ctx=cpu(9))
    assert np.array_equal(draw(resource.request(cpu(9), ResourceRequest.RANDOM),
                               "uniform", 16), a)


def test_seeded_streams_do_not_depend_on_the_worker_count():
    code = textwrap.dedent("""
        import numpy as np
        from mx_engine import cpu, engine
        from mx_storage import resource
        resource.seed(2024)
        outs = []
        for i in range(8):
            r = resource.request(cpu(i % 2), resource.ResourceRequest.RANDOM)
            engine.push_sync(lambda rc, r=r: outs.append(r.uniform(shape=100)), cpu(i % 2),
                             mutate_vars=[r.var])
        engine.wait_for_all()
        print(float(np.concatenate(sorted(outs, key=lambda a: a[0])).sum()))
    """)
    results = set()
    for n in ("1", "2", "4"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={"MXNET_CPU_WORKER_NTHREADS": n, "PATH": "/usr/bin:/bin"},
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        results.add(proc.stdout.strip())
    assert len(results) == 1


def test_bad_requests():
    with pytest.raises(ValueError, match="'kind' must be a ResourceRequest"):
        resource.request(cpu(), 7)
    with pytest.raises(TypeError, match="'ctx' must be a Context"):
        resource.request("cpu", ResourceRequest.RANDOM)
    with pytest.raises(TypeError, match="'seed_value' must be an int"):
        resource.seed(1.5)


@pytest.mark.gpu
def test_gpu_random_and_workspace():
    import cupy
    rng = resource.request(gpu(0), ResourceRequest.RANDOM)
    resource.seed(3)
    out = {}
    engine.push_sync(lambda rc: out.setdefault("a", rng.uniform(shape=100)), gpu(0),
                     mutate_vars=[rng.var])
    engine.wait_for_all()
    assert isinstance(out["a"], cupy.ndarray) and float(out["a"].max()) < 1
    ws = resource.request(gpu(0), ResourceRequest.TEMP_SPACE)
    assert isinstance(ws.get_space(10), cupy.ndarray)


def test_reserve_hands_out_consecutive_counters_and_seed_resets_at_once():
    r = resource.request(cpu(4), ResourceRequest.RANDOM)
    resource.seed(77)
    s, o = r.reserve(10)
    assert (s, o) == (resource._device_seed(77, cpu(4), ResourceRequest.RANDOM, 0), 0)
    assert r.reserve(5) == (s, 10) and r.reserve(0) == (s, 15) and r.offset == 15
    resource.seed(78)                # no engine round trip: the next reserve sees it
    s2, o2 = r.reserve(1)
    assert s2 != s and o2 == 0
