"""Writes the MXNet 1.9.1 reference outputs the iterator tests compare with.

Run with MXNet 1.9.1's interpreter from this directory:
    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_iter_reference.py
It writes the small input files it feeds MXNet (iter_inputs/) and one .npz of
batches per case (iter_reference/): for batch b of epoch e the arrays
``e{e}_b{b}_data``, ``e{e}_b{b}_label``, ``e{e}_b{b}_pad`` and, where MXNet
gives one, ``e{e}_b{b}_index``.  No pickles.
"""
import gzip
import os
import struct

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "iter_inputs")
OUT = os.path.join(HERE, "iter_reference")


def record(it, epochs=2):
    arrays = {}
    for e in range(epochs):
        if e:
            it.reset()
        for b, batch in enumerate(it):
            arrays[f"e{e}_b{b}_data"] = batch.data[0].asnumpy()
            if batch.label:
                arrays[f"e{e}_b{b}_label"] = batch.label[0].asnumpy()
            arrays[f"e{e}_b{b}_pad"] = np.array(batch.pad if batch.pad is not None else -1)
            if batch.index is not None:
                arrays[f"e{e}_b{b}_index"] = np.asarray(batch.index)
    return arrays


def save(name, arrays, **meta):
    arrays = dict(arrays)
    for k, v in meta.items():
        arrays["meta_" + k] = np.array(v)
    np.savez_compressed(os.path.join(OUT, name + ".npz"), **arrays)


def ndarray_cases():
    for n in (10, 7, 3):
        for bs in (3, 4, 5, 10):
            for mode in ("pad", "discard", "roll_over"):
                for shuffle in (False, True):
                    if mode == "roll_over" and bs > n:
                        continue            # MXNet 1.9.1 fails on these
                    np.random.seed(7)
                    data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
                    label = np.arange(n, dtype=np.float32)
                    it = mx.io.NDArrayIter(data, label, bs, shuffle=shuffle,
                                           last_batch_handle=mode)
                    save(f"ndarray_n{n}_bs{bs}_{mode}_{'shuf' if shuffle else 'seq'}",
                         record(it, epochs=3))


def write_csv(path, rows, fmt):
    with open(path, "w") as f:
        for r in rows:
            f.write(",".join(fmt % v for v in np.atleast_1d(r)) + "\n")


def csv_cases():
    rng = np.random.RandomState(0)
    data = np.round(rng.uniform(-50, 50, size=(10, 6)), 3).astype(np.float32)
    label = np.arange(10, dtype=np.float32) * 1.5
    write_csv(os.path.join(INPUTS, "data.csv"), data, "%.3f")
    write_csv(os.path.join(INPUTS, "label.csv"), label, "%.1f")
    write_csv(os.path.join(INPUTS, "data_int.csv"), np.arange(30).reshape(10, 3) - 7, "%d")
    d, l = os.path.join(INPUTS, "data.csv"), os.path.join(INPUTS, "label.csv")
    for bs in (3, 4, 5):
        for rb in (True, False):
            for shape in ((6,), (2, 3)):
                it = mx.io.CSVIter(data_csv=d, data_shape=shape, label_csv=l, batch_size=bs,
                                   round_batch=rb)
                tag = "x".join(map(str, shape))
                save(f"csv_bs{bs}_rb{int(rb)}_{tag}", record(it, epochs=3))
    it = mx.io.CSVIter(data_csv=d, data_shape=(6,), batch_size=4)
    save("csv_nolabel_bs4", record(it))
    it = mx.io.CSVIter(data_csv=os.path.join(INPUTS, "data_int.csv"), data_shape=(3,),
                       batch_size=4, dtype="int32", round_batch=False)
    save("csv_int32_bs4", record(it))


def write_idx(path, array, magic, compress=False):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", s) for s in array.shape)
    payload = header + array.astype(np.uint8).tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(payload)


def mnist_cases():
    rng = np.random.RandomState(1)
    images = rng.randint(0, 256, size=(50, 6, 7)).astype(np.uint8)
    labels = rng.randint(0, 10, size=50).astype(np.uint8)
    img, lab = os.path.join(INPUTS, "images-idx3-ubyte"), os.path.join(INPUTS, "labels-idx1-ubyte")
    write_idx(img, images, 2051)
    write_idx(lab, labels, 2049)
    cases = {
        "mnist_seq_bs8": dict(batch_size=8, shuffle=False),
        "mnist_seq_flat_bs8": dict(batch_size=8, shuffle=False, flat=True),
        "mnist_shuf_seed0_bs8": dict(batch_size=8, shuffle=True, seed=0),
        "mnist_shuf_seed3_bs7": dict(batch_size=7, shuffle=True, seed=3, flat=True),
        "mnist_part1of3_bs4": dict(batch_size=4, shuffle=False, num_parts=3, part_index=1),
        "mnist_part2of3_shuf_bs5": dict(batch_size=5, shuffle=True, seed=1, num_parts=3,
                                        part_index=2),
    }
    for name, kw in cases.items():
        it = mx.io.MNISTIter(image=img, label=lab, silent=True, **kw)
        save(name, record(it), **kw)


if __name__ == "__main__":
    os.makedirs(INPUTS, exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    ndarray_cases()
    csv_cases()
    mnist_cases()
