"""mx_kvstore against MXNet 1.9.1's outputs (tests/data/kvstore_mxnet191.npz,
written by tests/data/make_kvstore_reference.py): sums over lists of
devices, updaters, 2bit compression over several steps, row_sparse_pull.
test_engines.py runs this file again under the NaiveEngine."""
import pathlib

import numpy as np
import pytest

import mx_ndarray as nd
import mx_kvstore as kvs
from mx_engine import cpu

REF = np.load(pathlib.Path(__file__).parent / "data" / "kvstore_mxnet191.npz")
DEVICES = [cpu(0), cpu(1), cpu(2)]
SHAPES = [(4, 5), (7,), (3, 2, 3)]


@pytest.mark.parametrize("kv_type,keys,tag", [
    ("local", [3, 5, 9], "local_int"),
    ("local", ["a", "b", "c"], "local_str"),
    ("device", [3, 5, 9], "device_int"),
])
def test_push_pull_sums_over_devices(kv_type, keys, tag):
    kv = kvs.create(kv_type)
    for key in keys:
        kv.init(key, nd.array(REF[f"{tag}/{key}/init"]))
    for step in range(2):
        kv.push(keys, [[nd.array(v, ctx=c) for v, c in zip(REF[f"{tag}/{k}/push{step}"], DEVICES)]
                       for k in keys])
        outs = [[nd.zeros(s, ctx=c) for c in DEVICES] for s in SHAPES]
        kv.pull(keys, out=outs)
        for key, out in zip(keys, outs):
            got = np.stack([o.asnumpy() for o in out])
            np.testing.assert_allclose(got, REF[f"{tag}/{key}/pull{step}"], rtol=1e-6, atol=1e-6)
            assert [o.context for o in out] == DEVICES


@pytest.mark.parametrize("tag", ["local_updater", "device_updater"])
def test_custom_updater(tag):
    kv = kvs.create(tag.split("_")[0])

    def update(key, merged, stored):
        assert key == 3
        stored += merged * 2

    kv._set_updater(update)
    kv.init(3, nd.array(REF[f"{tag}/custom/init"]))
    for step in range(3):
        kv.push(3, [nd.array(v, ctx=c) for v, c in zip(REF[f"{tag}/custom/push{step}"], DEVICES)])
        out = nd.zeros((6, 4))
        kv.pull(3, out=out)
        np.testing.assert_allclose(out.asnumpy(), REF[f"{tag}/custom/pull{step}"], rtol=1e-6,
                                   atol=1e-6)


@pytest.mark.parametrize("ndev", [1, 2])
def test_2bit_compression_steps(ndev):
    """Each step's pull is the sum of the dequantised pushes; the residual
    carries what was not sent into the next step (MXNet, exactly)."""
    tag = f"2bit_{ndev}dev"
    kv = kvs.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("w", nd.zeros((37,)))
    for step in range(5):
        kv.push("w", [nd.array(v, ctx=c) for v, c in zip(REF[f"{tag}/push{step}"], DEVICES)])
        out = nd.zeros((37,))
        kv.pull("w", out=out)
        np.testing.assert_array_equal(out.asnumpy(), REF[f"{tag}/pull{step}"])


def test_row_sparse_push_and_pull():
    kv = kvs.create("local")
    kv.init("e", nd.array(REF["rsp/init"]).tostype("row_sparse"))
    kv.push("e", [nd.array(g, ctx=c).tostype("row_sparse") for g, c in zip(REF["rsp/push"],
                                                                             DEVICES)])
    for i in range(3):
        out = nd.sparse.zeros("row_sparse", (6, 3))
        dtype = ("int64", "float32", "int32")[i]         # MXNet takes any dtype of ids
        kv.row_sparse_pull("e", out=out, row_ids=nd.array(REF[f"rsp/row_ids{i}"], dtype=dtype))
        np.testing.assert_allclose(out.asnumpy(), REF[f"rsp/pull{i}"], rtol=1e-6)
        np.testing.assert_array_equal(out.indices.asnumpy(), REF[f"rsp/pull{i}_indices"])
