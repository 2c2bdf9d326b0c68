"""The process-wide thread pool of the CPU kernels (mx_ops.core._pool):
one pool shared by every kernel module, every item of a job run once on a
slot below its thread count, nested jobs and forked children serial, many
concurrent callers, and the thread count from MXNet's environment."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_ops import invoke
from mx_ops.core import _pool
from mx_ops.ops.nn import _conv_cpu
from mx_ops.test_utils import kernel_threads

# Above kParallelMinElements (2**17) elements: split across threads.
BIG = (1 << 19) + 37
RNG = np.random.default_rng(5)


def run_python(script, timeout=120, **env):
    """(returncode, stdout, stderr) of ``script`` in a fresh interpreter
    with ``env`` added to the environment (None: removed)."""
    environ = dict(os.environ)
    for key, value in env.items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=environ,
                         capture_output=True, text=True, timeout=timeout)
    return res.returncode, res.stdout, res.stderr


def test_every_kernel_module_shares_one_pool():
    # set_max_threads through one module is the max_threads of the pool the
    # others use: a per-module copy would not see it.
    with kernel_threads(3):
        assert _pool.max_threads() == 3 and _conv_cpu.max_threads() == 3
        a = RNG.standard_normal(BIG).astype(np.float32)
        x = RNG.standard_normal((1024, 1000)).astype(np.float32)
        label = RNG.integers(0, 1000, 1024).astype(np.float32)
        w = RNG.standard_normal((256, 1000)).astype(np.float32)
        for op, inputs, params in (("relu", [a], {}),                         # elemwise
                                   ("softmax_cross_entropy", [x, label], {}),  # loss
                                   ("FullyConnected", [x, w], {"num_hidden": 256,
                                                               "no_bias": True})):   # nn
            before = _pool.stats()["jobs"]
            invoke(op, inputs, **params)
            assert _pool.stats()["jobs"] > before, op
    assert _pool.stats()["threads_started"] >= 2


def test_max_threads_is_per_calling_thread():
    seen = {}

    def other():
        seen["other"] = _pool.max_threads()
    with kernel_threads(5):
        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        assert _pool.max_threads() == 5
    assert seen["other"] == _pool.settings()["threads"]
    with pytest.raises(ValueError, match="set_max_threads: n must be at least 1, got 0"):
        _pool.set_max_threads(0)


@settings(max_examples=40, deadline=None)
@given(threads=st.integers(1, 6), items=st.integers(0, 300), item_us=st.sampled_from([0, 20]))
def test_each_item_runs_once_on_a_slot_below_the_thread_count(threads, items, item_us):
    slot, thread, nested = _pool.run_probe(threads, items, item_us)
    assert slot.shape == (items,) and (slot >= 0).all() and (slot < threads).all()
    assert not nested.any()
    # One OS thread per slot within the job (slots name workspace slabs).
    for s in np.unique(slot):
        assert len(np.unique(thread[slot == s])) == 1
    if items <= 1 or threads == 1:
        assert (slot == 0).all()


def test_nested_jobs_run_serially_on_the_calling_thread():
    slot, _, nested = _pool.run_probe(3, 40, 50, inner=7)
    assert nested.all() and (slot < 3).all()


@settings(max_examples=25, deadline=None)
@given(n=st.integers((1 << 17) - 70, 5 << 17), threads=st.integers(1, 5),
       offset=st.integers(0, 15))
def test_split_elementwise_kernels_cover_every_element(n, threads, offset):
    # Ranges are claimed dynamically; every element is written exactly once
    # (add is exact) whatever the thread count, size and alignment.
    a = RNG.integers(-1000, 1000, n + offset).astype(np.float32)[offset:]
    b = RNG.integers(-1000, 1000, n).astype(np.float32)
    out = np.full(n + 1, 7, np.float32)
    with kernel_threads(threads):
        invoke("elemwise_add", [a, b], out=out[:n])
        np.testing.assert_array_equal(out[:n], a + b)
        assert out[n] == 7
        invoke("elemwise_add", [a, b], out=out[:n], req="add")
        np.testing.assert_array_equal(out[:n], 2 * (a + b))


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_results_do_not_depend_on_the_thread_count(threads):
    x = RNG.standard_normal((1024, 1000)).astype(np.float32)
    label = RNG.integers(0, 1000, 1024).astype(np.float32)
    w = RNG.standard_normal((300, 1000)).astype(np.float32)
    with kernel_threads(1):
        want = [invoke("softmax", [x]), invoke("softmax_cross_entropy", [x, label]),
                invoke("FullyConnected", [x, w], num_hidden=300, no_bias=True),
                invoke("sum", [x], axis=1)]
    with kernel_threads(threads):
        got = [invoke("softmax", [x]), invoke("softmax_cross_entropy", [x, label]),
               invoke("FullyConnected", [x, w], num_hidden=300, no_bias=True),
               invoke("sum", [x], axis=1)]
    for g, w_ in zip(got, want):
        np.testing.assert_array_equal(g, w_)


def test_many_concurrent_callers_get_exact_results():
    # Callers racing for the pool: one runs its job on the pool, the others
    # alone on their own thread; all must finish with exact results.
    a = RNG.integers(-100, 100, BIG).astype(np.float32)
    b = RNG.integers(-100, 100, BIG).astype(np.float32)
    x = RNG.standard_normal((512, 1000)).astype(np.float32)
    want_sm = invoke("softmax", [x])
    errors = []

    def caller(k):
        try:
            with kernel_threads(1 + k % 3):
                for _ in range(15):
                    np.testing.assert_array_equal(invoke("elemwise_add", [a, b]), a + b)
                    np.testing.assert_array_equal(invoke("softmax", [x]), want_sm)
                    slot, _, _ = _pool.run_probe(3, 50)
                    assert (slot >= 0).all()
        except Exception as exc:          # noqa: BLE001 - reported below
            errors.append(repr(exc))
    threads = [threading.Thread(target=caller, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a caller hung"
    assert errors == []


def test_engine_workers_share_the_pool():
    # Several engine CPU workers run large kernels at once (mx.nd's path).
    code, out, err = run_python("""
        import numpy as np
        import mx
        from mx_ops.core import _pool
        a = mx.nd.array(np.arange(1 << 19, dtype=np.float32))
        outs = [mx.nd.relu(a - float(k)) for k in range(32)]
        for k, o in enumerate(outs):
            assert np.array_equal(o.asnumpy(), np.maximum(np.arange(1 << 19) - k, 0)), k
        print(_pool.stats()["jobs"] > 0)
    """, MXNET_CPU_WORKER_NTHREADS="3", OMP_NUM_THREADS="2")
    assert code == 0, err
    assert out.split()[-1] == "True"


def test_a_forked_child_runs_jobs_serially():
    code, out, err = run_python("""
        import os, sys
        import numpy as np
        from mx_ops import invoke
        from mx_ops.core import _pool
        _pool.set_max_threads(3)
        a = np.ones((1 << 19) + 3, np.float32)
        invoke("elemwise_add", [a, a])           # the parent's workers exist now
        assert _pool.stats()["threads_started"] >= 1
        pid = os.fork()
        if pid == 0:
            jobs = _pool.stats()["jobs"]
            ok = float(invoke("elemwise_add", [a, a]).sum()) == 2 * a.size
            slot, _, _ = _pool.run_probe(3, 20)
            ok = ok and (slot == 0).all() and _pool.stats()["jobs"] == jobs
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """, timeout=60)
    assert code == 0, err
    assert out.split()[-1] == "0"


@pytest.mark.parametrize("env, threads", [
    ({"OMP_NUM_THREADS": "3", "MXNET_OMP_MAX_THREADS": None}, 3),
    ({"OMP_NUM_THREADS": "4,2", "MXNET_OMP_MAX_THREADS": None}, 4),
    ({"OMP_NUM_THREADS": "6", "MXNET_OMP_MAX_THREADS": "2"}, 2),
    ({"OMP_NUM_THREADS": None, "MXNET_OMP_MAX_THREADS": "1"}, 1),
])
def test_threads_come_from_the_environment(env, threads):
    code, out, err = run_python("""
        from mx_ops.core import _pool
        from mx_ops.ops.nn import _conv_cpu
        print(_pool.settings()["threads"], _conv_cpu.max_threads())
    """, **env)
    assert code == 0, err
    assert out.split()[-2:] == [str(threads), str(threads)]


def test_bad_environment_values_are_named_and_ignored():
    code, out, err = run_python("""
        import os
        from mx_ops.core import _pool
        print(_pool.settings()["threads"], _pool.settings()["spin_us"], len(os.sched_getaffinity(0)))
    """, OMP_NUM_THREADS="many", MX_OPS_POOL_SPIN_US="-5", MXNET_OMP_MAX_THREADS=None)
    assert code == 0, err
    threads, spin, cpus = out.split()[-3:]
    assert threads == cpus and float(spin) == _pool.DEFAULT_SPIN_US
    assert "ignoring OMP_NUM_THREADS='many': an integer >= 1 is needed" in err
    assert "ignoring MX_OPS_POOL_SPIN_US='-5': an integer >= 0 is needed" in err


def test_spin_is_configurable():
    code, out, err = run_python("""
        from mx_ops.core import _pool
        print(_pool.settings()["spin_us"])
        _pool.configure_pool(spin_us=0)
        slot, _, _ = _pool.run_probe(2, 100, 10)
        print(_pool.settings()["spin_us"], (slot < 2).all())
    """, MX_OPS_POOL_SPIN_US="120")
    assert code == 0, err
    assert out.split() == ["120.0", "0.0", "True"]
    with pytest.raises(ValueError, match="configure_pool: spin_us must be >= 0, got -1"):
        _pool.configure_pool(spin_us=-1)
    with pytest.raises(ValueError, match="configure_pool: threads must be at least 1, got 0"):
        _pool.configure_pool(threads=0)
