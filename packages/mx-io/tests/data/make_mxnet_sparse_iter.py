"""Writes sparse_iter_ref.npz: MXNet 1.9.1's NDArrayIter batches over a
CSRNDArray (as dense values: MXNet's slice_axis falls back to dense) for
test_ndarray_iter_sparse.py.

Run from this folder with the reference interpreter (never by the tests):
    OPENBLAS_CORETYPE=Haswell MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 \\
        /tmp/mxnet-venv/bin/python make_mxnet_sparse_iter.py
"""
import mxnet as mx
import numpy as np


def source():
    rng = np.random.default_rng(3)
    dense = rng.uniform(-1, 1, (11, 7)).astype(np.float32)
    dense[rng.uniform(size=dense.shape) < 0.6] = 0
    return dense


def main():
    dense = source()
    out = {"source": dense}
    csr = mx.nd.array(dense).tostype("csr")
    labels = np.arange(11, dtype=np.float32)
    cases = {
        "plain": dict(data=csr, label=labels, batch_size=3),
        "shuffle": dict(data=csr, label=labels, batch_size=4, shuffle=True),
        "csr_label": dict(data=labels, label=csr, batch_size=5, shuffle=True),
    }
    for name, kwargs in cases.items():
        np.random.seed(0)
        it = mx.io.NDArrayIter(last_batch_handle="discard", **kwargs)
        for epoch in range(2):
            for b, batch in enumerate(it):
                out[f"{name}_{epoch}_{b}_data"] = batch.data[0].asnumpy()
                out[f"{name}_{epoch}_{b}_label"] = batch.label[0].asnumpy()
            it.reset()
    np.savez_compressed("sparse_iter_ref.npz", **out)


if __name__ == "__main__":
    main()
