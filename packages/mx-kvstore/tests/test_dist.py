"""The distributed stores on MPI, each test a real job of 2-4 ranks started
by the launcher (python -m mx_kvstore.launch), with a timeout."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.mpi

SCRIPTS = pathlib.Path(__file__).parent / "dist_scripts"


def launch(script, workers=2, servers=1, timeout=None, env=None, limit=60):
    cmd = [sys.executable, "-m", "mx_kvstore.launch", "-n", str(workers), "-s", str(servers)]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    cmd += [sys.executable, str(SCRIPTS / script)]
    full_env = dict(os.environ, PYTHONPATH=str(SCRIPTS), MXNET_CPU_WORKER_NTHREADS="1")
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=full_env)
    reports = {}
    for line in proc.stdout.splitlines():
        if line.startswith("REPORT "):
            r = json.loads(line[len("REPORT "):])
            reports[r["rank"]] = r
    return proc, reports


def test_sync_sums_over_two_workers():
    proc, reports = launch("sync_sums.py")
    assert proc.returncode == 0, proc.stderr
    assert sorted(reports) == [0, 1]
    ramp = np.arange(15, dtype=np.float32).reshape(3, 5)
    for r in reports.values():
        assert r["num_workers"] == 2 and r["type"] == "dist_sync"
        for step, (k3, b0, b1) in enumerate(r["results"][:3]):
            # sum over workers of ramp*(rank+1)+step
            np.testing.assert_array_equal(k3, ramp * 3 + 2 * step)
            # each worker pushes its two devices' sum: rank + step
            np.testing.assert_array_equal(b0, np.full((3, 5), 0 + 1 + 2 * step, np.float32))
            np.testing.assert_array_equal(b1, b0)
        np.testing.assert_array_equal(r["results"][3], np.full((3, 5), 3.0))


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


def test_hung_worker_fails_the_others_within_the_timeout():
    proc, reports = launch("hung_worker.py", timeout=3, limit=40)
    assert proc.returncode != 0
    error = reports[0]["error"]
    assert "worker 1 (MPI rank 1) did not reach the push of key 0" in error, error
    assert reports[0]["after"] < 3.0
    assert "rank 1 (worker 1 (MPI rank 1)) still ran" in proc.stderr, proc.stderr
    assert "killed as hung" in proc.stderr


def test_launcher_refuses_bad_arguments():
    proc = subprocess.run([sys.executable, "-m", "mx_kvstore.launch", "-n", "0", "true"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "-n 0: need at least one worker" in proc.stderr
