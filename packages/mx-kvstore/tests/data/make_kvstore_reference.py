"""Writes kvstore_mxnet191.npz: MXNet 1.9.1's KVStore outputs that
test_reference.py compares mx_kvstore with.

Run with MXNet 1.9.1 (``/tmp/mxnet-venv/bin/python make_kvstore_reference.py``).
Every input is drawn from a seeded NumPy generator and stored beside the
output, so the test replays the same calls.  Names: ``<case>/<what>``.
"""
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kvstore_mxnet191.npz")
DEVICES = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
SHAPES = [(4, 5), (7,), (3, 2, 3)]
data = {}


def record_sums(kv_type, keys, tag):
    """push of one value per device, then pull into every device, twice."""
    rng = np.random.default_rng(len(tag))
    kv = mx.kv.create(kv_type)
    for key, shape in zip(keys, SHAPES):
        init = rng.standard_normal(shape).astype(np.float32)
        data[f"{tag}/{key}/init"] = init
        kv.init(key, mx.nd.array(init))
    for step in range(2):
        for key, shape in zip(keys, SHAPES):
            vals = rng.standard_normal((len(DEVICES),) + shape).astype(np.float32)
            data[f"{tag}/{key}/push{step}"] = vals
        kv.push(keys, [[mx.nd.array(v, ctx=c) for v, c in zip(data[f"{tag}/{k}/push{step}"], DEVICES)]
                       for k in keys])
        outs = [[mx.nd.zeros(s, ctx=c) for c in DEVICES] for s in SHAPES]
        kv.pull(keys, out=outs)
        for key, out in zip(keys, outs):
            data[f"{tag}/{key}/pull{step}"] = np.stack([o.asnumpy() for o in out])


def record_updater(kv_type, tag):
    """A user updater (stored += 2 * merged) and MXNet's SGD with momentum."""
    rng = np.random.default_rng(7)
    for name in ("custom", "sgd"):
        kv = mx.kv.create(kv_type)
        if name == "custom":
            def update(key, merged, stored):
                stored += merged * 2
            kv._set_updater(update)
        else:
            kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01,
                                              rescale_grad=0.5))
        init = rng.standard_normal((6, 4)).astype(np.float32)
        data[f"{tag}/{name}/init"] = init
        kv.init(3, mx.nd.array(init))
        for step in range(3):
            vals = rng.standard_normal((2, 6, 4)).astype(np.float32)
            data[f"{tag}/{name}/push{step}"] = vals
            kv.push(3, [mx.nd.array(v, ctx=c) for v, c in zip(vals, DEVICES)])
            out = mx.nd.zeros((6, 4))
            kv.pull(3, out=out)
            data[f"{tag}/{name}/pull{step}"] = out.asnumpy()


def record_compression():
    """2bit compression on 'device': several steps, so the residual feeds
    back; one device (the dequantized value itself) and two (their sum).
    37 elements: not a multiple of 16, the last packed word is partial."""
    rng = np.random.default_rng(11)
    for ndev in (1, 2):
        tag = f"2bit_{ndev}dev"
        kv = mx.kv.create("device")
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        kv.init("w", mx.nd.zeros((37,)))
        for step in range(5):
            vals = (rng.standard_normal((ndev, 37)) * 0.4).astype(np.float32)
            data[f"{tag}/push{step}"] = vals
            kv.push("w", [mx.nd.array(v, ctx=c) for v, c in zip(vals, DEVICES)])
            out = mx.nd.zeros((37,))
            kv.pull("w", out=out)
            data[f"{tag}/pull{step}"] = out.asnumpy()


def record_row_sparse():
    """row_sparse values: init, a push from two devices, row_sparse_pull
    with unsorted and repeated row ids."""
    rng = np.random.default_rng(5)
    shape = (6, 3)
    kv = mx.kv.create("local")
    init = rng.standard_normal(shape).astype(np.float32)
    init[[1, 4]] = 0
    data["rsp/init"] = init
    kv.init("e", mx.nd.array(init).tostype("row_sparse"))
    grads = []
    for rows in ([0, 2], [2, 5]):
        g = np.zeros(shape, np.float32)
        g[rows] = rng.standard_normal((len(rows), shape[1]))
        grads.append(g)
    data["rsp/push"] = np.stack(grads)
    kv.push("e", [mx.nd.array(g, ctx=c).tostype("row_sparse") for g, c in zip(grads, DEVICES)])
    for i, row_ids in enumerate(([0, 5, 2], [3, 3, 1], [5])):
        data[f"rsp/row_ids{i}"] = np.array(row_ids, np.int64)
        out = mx.nd.sparse.zeros("row_sparse", shape)
        kv.row_sparse_pull("e", out=out, row_ids=mx.nd.array(row_ids, dtype="int64"))
        data[f"rsp/pull{i}"] = out.asnumpy()
        data[f"rsp/pull{i}_indices"] = out.indices.asnumpy()


record_sums("local", [3, 5, 9], "local_int")
record_sums("local", ["a", "b", "c"], "local_str")
record_sums("device", [3, 5, 9], "device_int")
record_updater("local", "local_updater")
record_updater("device", "device_updater")
record_compression()
record_row_sparse()
np.savez_compressed(OUT, **data)
print(f"wrote {len(data)} arrays to {OUT}")
