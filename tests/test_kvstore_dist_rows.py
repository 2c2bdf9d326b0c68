"""row_sparse values, dist_sync_device and KVStoreServer's controller on the
distributed stores: real jobs through the launcher (test_kvstore_dist.py's
``launch``), results against NumPy and mx.nd.sgd_update."""
import json
import pathlib
import sys

import numpy as np
import pytest

# The jobs' shared data (rows_data.py, beside the scripts) and the launcher
# helper of test_kvstore_dist.py (pytest imports test files by path).
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data" / "kvstore_dist"
sys.path[:0] = [str(HERE / "kvstore_dist"), str(HERE)]
try:
    from rows_data import INIT, ROWS, dense, push_of, summed
    from test_kvstore_dist import launch
finally:
    del sys.path[:2]

pytestmark = pytest.mark.mpi


def _sgd_lazy(weight, grads, lr, wd, rescale):
    """NumPy's statement of MXNet's lazy SGD: the rows present in the summed
    row_sparse gradient only, w -= lr * (rescale * g + wd * w)."""
    weight = weight.copy()
    rows = np.unique(np.concatenate([r for r, _ in grads]))
    g = sum(dense(r, v) for r, v in grads)
    weight[rows] -= lr * (rescale * g[rows] + wd * weight[rows])
    return weight


@pytest.mark.parametrize("servers", [1, 2])
def test_row_sparse_pushes_pulls_and_lazy_sgd_on_the_servers(servers):
    # bound 60 elements: the 50x3 key is split over 2 servers by whole rows
    proc, reports = launch("row_sparse.py", workers=2, servers=servers,
                           env={"MXNET_KVSTORE_BIGARRAY_BOUND": "60"})
    assert proc.returncode == 0, proc.stderr
    assert sorted(reports) == [0, 1]
    assert any(len(push_of(r, 2)[0]) == 0 for r in range(2))   # a push of no rows
    for r in reports.values():
        np.testing.assert_array_equal(r["pulled"][0], INIT)
        for step in (1, 2):
            np.testing.assert_array_equal(r["pulled"][step], summed(step, 2))
        np.testing.assert_array_equal(r["dense"], summed(2, 2))
        assert len(r["examples"]) == 25 and max(r["examples"]) > 5
        assert r["match"] == [True, True]
        weight = INIT
        for step in (3, 4):
            weight = _sgd_lazy(weight, [push_of(w, step) for w in range(2)], 0.1, 0.05, 0.5)
        np.testing.assert_allclose(r["sgd"], weight, rtol=1e-6, atol=1e-6)
        untouched = ~np.isin(np.arange(ROWS), np.concatenate(
            [push_of(w, s)[0] for w in range(2) for s in (3, 4)]))
        assert untouched.any()
        np.testing.assert_array_equal(np.array(r["sgd"])[untouched], INIT[untouched])
    # and MXNet 1.9.1's ps-lite running the same script (data/kvstore_dist/make_rows_reference.py):
    # the init pull and the server's lazy SGD.  Not the sums without an optimizer: MXNet's
    # server then stores only the rows pushed and serves a pull of row r from its r-th
    # stored row, so its pulls there are wrong (with one server, rows 7, 8, 9... of the sum
    # at rows 0, 1, 2).
    mxnet = json.loads((DATA / "rows_mxnet191.json").read_text())["servers"][str(servers)]
    for rank, r in reports.items():
        ref = mxnet[str(rank)]
        assert ref["match"] == [True, True]
        assert r["pulled"][0] == ref["pulled"][0]
        np.testing.assert_allclose(r["sgd"], ref["sgd"], rtol=1e-6, atol=1e-7)


def test_row_sparse_on_dist_async_updates_at_each_push_and_names_bad_input():
    proc, reports = launch("rows_async.py")
    assert proc.returncode == 0, proc.stderr
    expected = INIT - sum(dense(*push_of(w, s)) for w in range(2) for s in (1, 2, 3))
    for r in reports.values():
        np.testing.assert_allclose(r["final"], expected, rtol=1e-6, atol=1e-6)
        pushed_dense, bad_row = r["errors"]
        assert "key 5 was initialized row_sparse" in pushed_dense, pushed_dense
        assert "row_sparse_pull: key 5: row id 50 is outside 0..49" in bad_row, bad_row


def _check_device_job(proc, reports, devices):
    assert proc.returncode == 0, proc.stderr
    ramp = np.arange(24, dtype=np.float32).reshape(4, 6)
    for r in reports.values():
        for step, outs in enumerate(r["sums"]):
            for out in outs:        # every device's out holds the sum
                np.testing.assert_array_equal(out, ramp * 9 + 4 * step)
        assert r["contexts"][0] == devices
        for value in r["pushpulled"]:
            np.testing.assert_array_equal(value, np.full((4, 6), 6.0))
        (ids0, data0, ctx0), (ids1, data1, ctx1) = r["rows"]
        assert ids0 == [0, 1, 5, 9] and ids1 == [5] and [ctx0, ctx1] == devices
        np.testing.assert_array_equal(data0, [[1, 1], [2, 2], [23, 23], [20, 20]])
        np.testing.assert_array_equal(data1, [[23, 23]])
        # SGD(learning_rate=0.5) set by command 0 (JSON): 1 - 0.5 * 4 devices' ones
        np.testing.assert_array_equal(r["updated"], np.full((4, 6), -1.0))
    assert proc.stdout.count("server 0, unknown command (7, hello)") == 1, proc.stdout


def test_dist_sync_device_sums_on_the_first_device_and_pulls_into_every_device():
    proc, reports = launch("device_sum.py")
    _check_device_job(proc, reports, ["cpu(1)", "cpu(0)"])


@pytest.mark.gpu
def test_dist_sync_device_on_a_gpu():
    proc, reports = launch("device_sum.py", env={"KV_GPU": "1"}, limit=120)
    _check_device_job(proc, reports, ["gpu(0)", "cpu(0)"])
