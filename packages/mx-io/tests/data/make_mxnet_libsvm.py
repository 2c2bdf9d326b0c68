"""Writes the LibSVM inputs under libsvm/ and MXNet 1.9.1's LibSVMIter
batches on them (libsvm/mxnet_batches.json), for tests/test_libsvm_iter.py.

Run with MXNet 1.9.1's interpreter: /tmp/mxnet-venv/bin/python make_mxnet_libsvm.py
"""
import json
import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libsvm")


def libsvm_lines(rng, rows, columns, extras):
    """Random sparse rows (some empty), labels with a few `:weight`s, `qid`s
    and comments, indices in ascending order (as MXNet expects)."""
    lines = []
    for r in range(rows):
        cols = np.sort(rng.choice(columns, size=rng.integers(0, 5), replace=False))
        label = f"{rng.integers(-3, 4)}" if r % 3 else f"{rng.normal():.4g}"
        if extras and r % 7 == 3:
            label += ":0.5"
        pairs = [f"{c}:{rng.normal():.6g}" for c in cols]
        if extras and r % 5 == 2:
            pairs.insert(0, "qid:7")
        line = " ".join([label] + pairs)
        if extras and r % 6 == 4:
            line += "  # a comment"
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_inputs():
    rng = np.random.default_rng(17)
    os.makedirs(os.path.join(HERE, "dir"), exist_ok=True)
    files = {
        "data.libsvm": libsvm_lines(rng, 23, 12, extras=True),
        "label.libsvm": libsvm_lines(rng, 23, 4, extras=False),
        "dir/a.libsvm": libsvm_lines(rng, 9, 12, extras=False),
        "dir/b.libsvm": libsvm_lines(rng, 8, 12, extras=False),
    }
    for name, text in files.items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(text)


# name: (LibSVMIter arguments, relative to HERE, epochs)
CASES = {
    "plain": (dict(data_libsvm="data.libsvm", data_shape=(12,), batch_size=5), 3),
    "label_file": (dict(data_libsvm="data.libsvm", data_shape=(12,), label_libsvm="label.libsvm",
                        label_shape=(4,), batch_size=4), 2),
    "one_batch": (dict(data_libsvm="data.libsvm", data_shape=(12,), batch_size=23), 2),
    **{f"part{k}of3": (dict(data_libsvm="data.libsvm", data_shape=(12,), batch_size=3,
                            num_parts=3, part_index=k), 2) for k in range(3)},
    "dir": (dict(data_libsvm="dir", data_shape=(12,), batch_size=4), 2),
    # MXNet 1.9.1 crashes (segfault) on part 1 of this directory, and on a
    # label file split in parts: those are tested against the whole-data
    # batches instead.
    "dir_part0of2": (dict(data_libsvm="dir", data_shape=(12,), batch_size=4, num_parts=2,
                          part_index=0), 2),
}


def csr_record(arr):
    return {"indptr": arr.indptr.asnumpy().tolist(), "indices": arr.indices.asnumpy().tolist(),
            "values": arr.data.asnumpy().tolist(), "shape": list(arr.shape)}


def record(kwargs, epochs):
    import mxnet as mx
    args = dict(kwargs, data_libsvm=os.path.join(HERE, kwargs["data_libsvm"]))
    if "label_libsvm" in args:
        args["label_libsvm"] = os.path.join(HERE, args["label_libsvm"])
    it = mx.io.LibSVMIter(**args)
    out = []
    for _ in range(epochs):
        batches = []
        for b in it:
            label = b.label[0]
            batches.append({
                "data": csr_record(b.data[0]),
                "label": csr_record(label) if label.stype == "csr" else label.asnumpy().tolist(),
                "index": b.index.tolist(), "pad": int(b.pad)})
        out.append(batches)
        it.reset()
    return out


def main():
    write_inputs()
    result = {name: {"kwargs": kwargs, "epochs": record(kwargs, epochs)}
              for name, (kwargs, epochs) in CASES.items()}
    with open(os.path.join(HERE, "mxnet_batches.json"), "w") as f:
        json.dump(result, f, indent=None)


if __name__ == "__main__":
    main()
