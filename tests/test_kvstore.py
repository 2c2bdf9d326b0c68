"""mx.kv / mx.kvstore: the meta-package's wiring of mx_kvstore, and the
store with mx.optimizer's optimizers against MXNet 1.9.1's outputs
(packages/mx-kvstore/tests/data/kvstore_mxnet191.npz)."""
import importlib
import pathlib

import numpy as np
import pytest

import mx

REF = np.load(pathlib.Path(__file__).resolve().parent.parent / "packages" / "mx-kvstore" /
              "tests" / "data" / "kvstore_mxnet191.npz")
DEVICES = [mx.cpu(0), mx.cpu(1)]


def test_module_wiring():
    assert mx.kv is mx.kvstore
    assert importlib.import_module("mx.kv") is mx.kvstore
    assert importlib.import_module("mx.kvstore.base").create is mx.kv.create
    assert isinstance(mx.kv.create("local"), mx.kv.KVStore)
    assert issubclass(mx.kv.KVStore, mx.kv.KVStoreBase)


def _optimizer():
    opt = pytest.importorskip("mx.optimizer")
    if not hasattr(opt, "SGD") or not hasattr(opt, "get_updater"):
        pytest.skip("mx.optimizer has no SGD/get_updater in this build")
    return opt


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_set_optimizer_sgd_matches_mxnet(kv_type):
    opt = _optimizer()
    tag = f"{kv_type}_updater/sgd"
    kv = mx.kv.create(kv_type)
    kv.set_optimizer(opt.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    kv.init(3, mx.nd.array(REF[f"{tag}/init"]))
    for step in range(3):
        kv.push(3, [mx.nd.array(v, ctx=c) for v, c in zip(REF[f"{tag}/push{step}"], DEVICES)])
        out = mx.nd.zeros((6, 4))
        kv.pull(3, out=out)
        np.testing.assert_allclose(out.asnumpy(), REF[f"{tag}/pull{step}"], rtol=1e-5, atol=1e-6)


def test_optimizer_states_round_trip(tmp_path):
    """A store saved after step 0 and loaded into a fresh one continues
    with the same momentum: step 1 gives MXNet's result (and differs
    without the loaded states)."""
    opt = _optimizer()
    tag = "local_updater/sgd"

    def store(init):
        kv = mx.kv.create("local")
        kv.set_optimizer(opt.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
        kv.init(3, init)
        return kv

    def step(kv, i):
        kv.push(3, [mx.nd.array(v, ctx=c) for v, c in zip(REF[f"{tag}/push{i}"], DEVICES)])
        out = mx.nd.zeros((6, 4))
        kv.pull(3, out=out)
        return out.asnumpy()

    first = store(mx.nd.array(REF[f"{tag}/init"]))
    after0 = step(first, 0)
    first.save_optimizer_states(str(tmp_path / "kv.states"))
    resumed = store(mx.nd.array(after0))
    resumed.load_optimizer_states(str(tmp_path / "kv.states"))
    np.testing.assert_allclose(step(resumed, 1), REF[f"{tag}/pull1"], rtol=1e-5, atol=1e-6)
    fresh = store(mx.nd.array(after0))
    assert not np.allclose(step(fresh, 1), REF[f"{tag}/pull1"], rtol=1e-5, atol=1e-6)


def test_compare_kvstore_local_quick(tmp_path):
    """The side-by-side script runs (without MXNet here: its column is '-')."""
    import os
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, str(root / "benchmarks/compare_kvstore_local.py"),
                           "--quick"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, MX_MXNET_PYTHON=""))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sum only" in proc.stdout and "updater" in proc.stdout
