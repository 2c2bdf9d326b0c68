"""The distributed stores on MPI, each test a real job of 2-4 ranks started
by the launcher (python -m mx_kvstore.launch), with a timeout."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

pytestmark = pytest.mark.mpi

SCRIPTS = pathlib.Path(__file__).parent / "kvstore_dist"
DATA = pathlib.Path(__file__).parent / "data" / "kvstore_dist"


def _run_group(cmd, limit, env):
    """Runs the launcher in its own process group; past ``limit`` seconds the
    whole group (launcher, mpiexec, every rank) is killed, so no rank of a
    hung job outlives the test."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def launch(script, workers=2, servers=1, timeout=None, env=None, limit=60):
    cmd = [sys.executable, "-m", "mx_kvstore.launch", "-n", str(workers), "-s", str(servers)]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    cmd += [sys.executable, str(SCRIPTS / script)]
    with tempfile.TemporaryDirectory() as where:
        # the scripts' folder first; an installed mx reached through the
        # caller's PYTHONPATH (a wheel unpacked with --target) stays reachable
        path = os.pathsep.join(filter(None, [str(SCRIPTS), os.environ.get("PYTHONPATH")]))
        full_env = dict(os.environ, PYTHONPATH=path, MXNET_CPU_WORKER_NTHREADS="1",
                        KV_REPORT_DIR=where)
        full_env.update(env or {})
        proc = _run_group(cmd, limit, full_env)
        reports = {}
        for path in sorted(pathlib.Path(where).glob("rank*.json")):
            r = json.loads(path.read_text())
            reports[r["rank"]] = r
    return proc, reports


def shm_env(shm="1", min_bytes=None, reduce_bytes=None):
    """MXNET_KVSTORE_SHM: the data through shared memory (every rank is on
    this host) or MPI messages (ranks on other hosts); _MIN_BYTES: from what
    size (default 4 MiB; 0: every dense key); _REDUCE_BYTES: from what size
    the workers sum (default 4 MiB; 0: every shared key), else the server."""
    env = {"MXNET_KVSTORE_SHM": shm}
    for name, value in (("MIN", min_bytes), ("REDUCE", reduce_bytes)):
        if value is not None:
            env[f"MXNET_KVSTORE_SHM_{name}_BYTES"] = str(value)
    return env


# 'dist': MXNet's sync store.  Every key through shared memory, the 11 MB
# one summed by the workers; every key summed by the workers (SGD on the
# servers included); messages; the defaults (only the 11 MB key shared)
@pytest.mark.parametrize("kv_type, env, shared", [
    ("dist_sync", shm_env(min_bytes=0), [True, True]),
    ("dist_sync", shm_env(min_bytes=0, reduce_bytes=0), [True, True]),
    ("dist", shm_env(min_bytes=0), [True, True]),
    ("dist_sync", shm_env("0"), [False, False]),
    ("dist_sync", shm_env(), [False, True])])
def test_sync_sums_then_server_side_sgd_equal_to_a_local_updater(kv_type, env, shared):
    proc, reports = launch("sync_sums.py", env=dict(env, KV_TYPE=kv_type))
    assert proc.returncode == 0, proc.stderr
    assert sorted(reports) == [0, 1]
    ramp = np.arange(15, dtype=np.float32).reshape(3, 5)
    for r in reports.values():
        assert r["num_workers"] == 2 and r["type"] == kv_type
        assert r["shared"] == shared
        for step, (k3, b0, b1) in enumerate(r["results"][:3]):
            # sum over workers of ramp*(rank+1)+step
            np.testing.assert_array_equal(k3, ramp * 3 + 2 * step)
            # each worker pushes its two devices' sum: rank + step
            np.testing.assert_array_equal(b0, np.full((3, 5), 0 + 1 + 2 * step, np.float32))
            np.testing.assert_array_equal(b1, b0)
        np.testing.assert_array_equal(r["results"][3], np.full((3, 5), 3.0))
        assert r["chunked"] == [True, True]
        # then SGD on the servers, sent as JSON, against a local updater
        assert r["match"] == [[True, True]] * 3
        assert min(r["moved"]) > 0.1
    # and MXNet 1.9.1's ps-lite running the same script (data/kvstore_dist/make_dist_reference.py)
    mxnet = json.loads((DATA / "dist_mxnet191.json").read_text())["workers"]
    for rank, r in reports.items():
        ref = mxnet[str(rank)]
        assert r["results"] == ref["results"]
        for ours, theirs in zip(r["weights"], ref["weights"]):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


def two_bit_sums(grads, threshold):
    """MXNet's 2bit formula, per worker: residual += grad; send +t where
    residual >= t, -t where <= -t, else 0; residual -= sent.  The server
    sums what the workers sent."""
    residuals = [np.zeros_like(g[0]) for g in grads]
    sums = []
    for step in range(len(grads[0])):
        total = np.zeros_like(grads[0][0])
        for worker, residual in enumerate(residuals):
            residual += grads[worker][step]
            sent = np.where(residual >= threshold, threshold,
                            np.where(residual <= -threshold, -threshold, 0)).astype(np.float32)
            residual -= sent
            total += sent
        sums.append(total)
    return sums


def test_big_array_is_split_over_two_servers():
    proc, reports = launch("big_array.py", workers=2, servers=2,
                           env={"MXNET_KVSTORE_BIGARRAY_BOUND": "100"})
    assert proc.returncode == 0, proc.stderr
    base = np.arange(1001, dtype=np.float32)
    for r in reports.values():
        np.testing.assert_array_equal(r["big"], base * 3)
        np.testing.assert_array_equal(r["small"], np.full(10, 3.0))
        # MXNet's split: round(n/S*i) .. round(n/S*(i+1)) on server i
        assert r["parts"] == [[0, 0, 501], [1, 501, 1001]]
    # 2bit on the wire, the split key quantised slice by slice
    grads = [[(np.sin(base * np.float32(0.37 * (rank + 1)) + np.float32(step)).astype(np.float32)
               * np.float32(0.8)) for step in range(2)] for rank in range(2)]
    expected = two_bit_sums(grads, 0.5)
    assert any(np.any(e == 0) for e in expected) and any(np.any(np.abs(e) == 1) for e in expected)
    for r in reports.values():
        for step in range(2):
            np.testing.assert_array_equal(r["compressed"][step], expected[step])


def test_async_converges_and_bounded_delay_holds_the_fast_worker():
    proc, reports = launch("async_delay.py", env={"MXNET_KVSTORE_MAX_DELAY": "1"})
    assert proc.returncode == 0, proc.stderr
    # worker 0 pushes 1, worker 1 (slow) pushes 100, lr 1: after worker 0's
    # k-th pushpull the weight is -(k + 100 * n1) with n1 >= k - 1.
    for k, seen in enumerate(reports[0]["seen"], start=1):
        n1 = (-seen - k) / 100
        assert n1 == int(n1) and n1 >= k - 1, (k, seen)
    for r in reports.values():
        np.testing.assert_allclose(r["final"], r["target"], atol=1e-4)


# the 4-float key as MPI messages (the default) and through shared memory,
# summed by a worker (whichever owns it: the other waits either way)
FAILURE_PATHS = [None, shm_env(min_bytes=0, reduce_bytes=0)]


@pytest.mark.parametrize("env", FAILURE_PATHS)
def test_killed_worker_is_named_by_the_survivors_and_the_launcher(env):
    proc, reports = launch("killed_worker.py", timeout=2, limit=40, env=env)
    assert proc.returncode != 0
    error = reports[0]["error"]
    assert "worker 1 (MPI rank 1) did not reach the push of key 0" in error, error
    assert reports[0]["after"] < 2.0
    assert "rank 1 (worker 1 (MPI rank 1)) died first: killed by signal 9 (SIGKILL)" \
        in proc.stderr, proc.stderr


@pytest.mark.parametrize("env", FAILURE_PATHS)
def test_hung_worker_fails_the_others_within_the_timeout(env):
    proc, reports = launch("hung_worker.py", timeout=2, limit=40, env=env)
    assert proc.returncode != 0
    error = reports[0]["error"]
    assert "worker 1 (MPI rank 1) did not reach the push of key 0" in error, error
    assert reports[0]["after"] < 2.0
    assert "rank 1 (worker 1 (MPI rank 1)) still ran" in proc.stderr, proc.stderr
    assert "killed as hung" in proc.stderr
    assert "died first" not in proc.stderr, proc.stderr  # killed by the launcher: hung only


def test_worker_that_stops_before_summing_its_chunk_is_named():
    proc, reports = launch("owner_hangs.py", timeout=2, limit=40,
                           env=shm_env(min_bytes=0, reduce_bytes=0))
    assert proc.returncode != 0
    owner = next(iter(reports.values()))["owner"]
    other = 1 - owner
    assert list(reports) == [other], proc.stderr        # the owner never reports
    error = reports[other]["error"]
    assert f"worker {owner} (MPI rank {owner}) did not reach the push of key 0" in error, error
    assert reports[other]["after"] < 2.0
    assert f"rank {owner} (worker {owner} (MPI rank {owner})) still ran" in proc.stderr, \
        proc.stderr


def test_launcher_refuses_bad_arguments():
    proc = subprocess.run([sys.executable, "-m", "mx_kvstore.launch", "-n", "0", "true"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "-n 0: need at least one worker" in proc.stderr


# both keys shared, the 6 MB one summed by the workers; both summed by the
# workers; messages; the defaults (the 6 MB key shared, summed by the workers)
@pytest.mark.parametrize("env, shared", [(shm_env(min_bytes=0), [True, True]),
                                         (shm_env(min_bytes=0, reduce_bytes=0), [True, True]),
                                         (shm_env("0"), [False, False]),
                                         (shm_env(), [False, True])])
def test_pull_after_push_is_held_to_the_round_end_and_keys_keep_call_order(env, shared):
    proc, reports = launch("pull_order.py", env=env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(reports) == [0, 1]
    for r in reports.values():
        assert r["shared"] == shared
        assert r["first"] == [[3.0] * 3] * 4
        before, after, reused = r["rounds"]
        assert before == [[3.0] * 3] * 4
        assert after == [[30.0] * 3] * 4
        assert reused == [[60.0] * 3] * 4
        assert r["big_ok"] == [True, True, True]


# What the server's SGD raises for an int32 key (MXNet 1.9.1's server:
# "This operation only support floating point types, not int32", then it
# terminates and its workers wait forever).
SERVER_ERROR = ("TypeInferenceError: multi_sgd_update: argument 'weight_0' has dtype int32; "
                "supported: float16, float32, float64")


def test_server_that_raises_fails_every_worker_at_once_naming_itself():
    # A 100 s timeout the job must not come near: the server's failure is
    # told, not waited out (the test's own limit is 40 s).
    proc, reports = launch("server_raises.py", timeout=100, limit=40)
    assert proc.returncode != 0
    assert sorted(reports) == [0, 1], proc.stderr
    server = "server 0 (MPI rank 2) failed on the pushpull of key 3 from worker"
    for r in reports.values():
        errors = r["errors"]
        assert server in errors["wait"] and SERVER_ERROR in errors["wait"], errors["wait"]
        assert r["after"] < 5.0
        for call in ("push", "barrier"):
            kind, text = errors[call]
            assert kind == "KVStoreError" and server in text and SERVER_ERROR in text, text
    assert "rank 2 (server 0 (MPI rank 2)) exited with status 1:\nkvstore: " + server \
        in proc.stderr, proc.stderr


def test_server_that_cannot_import_its_code_fails_the_job_at_once():
    # timeout 100 s: the failure must be told, not waited out
    start = time.monotonic()
    proc, reports = launch("server_import_fails.py", timeout=100, limit=40)
    assert time.monotonic() - start < 30, proc.stderr
    assert proc.returncode != 0
    assert sorted(reports) == [0, 1], proc.stderr
    for r in reports.values():
        kind, text = r["error"]
        assert kind == "KVStoreError", text
        assert ("server 0 (MPI rank 2) failed: ModuleNotFoundError: import of "
                "mx_kvstore._server") in text, text
        assert r["after"] < 10
    assert "rank 2 (server 0 (MPI rank 2)) exited with status 1:" in proc.stderr, proc.stderr
    assert "ModuleNotFoundError" in proc.stderr, proc.stderr


def test_refused_command_raises_once_and_the_store_stays_usable():
    proc, reports = launch("command_refused.py", timeout=100, limit=40)
    assert proc.returncode == 0, proc.stderr
    kind, text = reports[0]["refused"]
    assert kind == "KVStoreError", text
    assert "server 0 (MPI rank 2): command failed: ValueError: from_json: unknown " \
           "optimizer 'scriptonlysgd'" in text, text
    assert reports[1]["refused"] is None     # worker 0 sent the command
    for r in reports.values():
        # SGD, lr 0.5, on the two workers' summed ones
        assert r["value"] == [-1.0] * 4

# the 1.2 MB key's rounds summed by the server (its default) or by a worker
@pytest.mark.parametrize("reduce_bytes", [None, 0])
def test_shared_memory_round_waits_for_a_late_copy_out_of_the_buffer_it_sums_into(reduce_bytes):
    """Worker 1 copies its first pull's answer out 1 s late; the third
    round sums into that buffer only after the copy (shm_guard.py)."""
    proc, reports = launch("shm_guard.py", env=shm_env(min_bytes=0, reduce_bytes=reduce_bytes))
    assert proc.returncode == 0, proc.stderr
    for r in reports.values():
        assert r["shared"] and r["values"] == [30.0, 300.0]
    assert reports[1]["late"] == [3.0]


# (key, elements, dtype) of worker_sums.py, and its workers' pushes
WORKER_SUM_KEYS = [(0, 1000, "float32"), (1, 2_600_001, "float32"), (2, 2_200_000, "float16"),
                   (3, 1_100_000, "int32"), (4, 7, "float64")]


def _worker_sum_value(key, n, dtype, rank, step):
    x = (np.arange(n, dtype=np.int64) * (key + 3) + 7 * rank + step) % 61 - 30
    return (x * (rank + 1)).astype(dtype)


@pytest.mark.parametrize("workers, reduce_bytes", [(3, 0), (2, None)])
def test_workers_sum_the_large_keys_through_shared_memory(workers, reduce_bytes):
    """Every key at least MXNET_KVSTORE_SHM_REDUCE_BYTES large (default 4
    MiB) is summed by its chunks' owners, each chunk once per round, into
    the pushpull's output too; the smaller keys by the server."""
    env = shm_env(min_bytes=0, reduce_bytes=reduce_bytes)
    proc, reports = launch("worker_sums.py", workers=workers, env=env, limit=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(reports) == list(range(workers))
    bound = 4 << 20 if reduce_bytes is None else reduce_bytes
    expected = []
    for step in range(3):
        for key, n, dtype in WORKER_SUM_KEYS:
            nbytes = n * np.dtype(dtype).itemsize
            if nbytes >= bound:
                chunks = -(-nbytes // (4 << 20))
                expected += [[n, i, step != 1] for i in range(chunks)]
    done = sorted(s for r in reports.values() for s in r["summed"])
    assert done == sorted(expected)
    assert all(r["summed"] for r in reports.values())      # every worker owns some chunks
    for r in reports.values():
        assert r["attached"] == [True] * len(WORKER_SUM_KEYS)
        for step, got in enumerate(r["pulled"]):
            assert got[-1] == [True] * len(WORKER_SUM_KEYS), (step, got[-1])
            for (key, n, dtype), ends in zip(WORKER_SUM_KEYS, got):
                total = sum(_worker_sum_value(key, n, dtype, w, step) for w in range(workers))
                assert ends == total[:5].tolist() + total[-5:].tolist()
