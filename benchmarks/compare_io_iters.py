"""Data iterators side by side: ours (``import mx``), MXNet 1.9.1 and a
PyTorch DataLoader, each in its own interpreter, one after another.

    python benchmarks/compare_io_iters.py [--quick]

Cases (one epoch each, every batch waited for, best of R):
  NDArrayIter over (60000, 784) float32 data and (60000,) labels, batch 128,
  shuffle off and on; PyTorch: DataLoader(TensorDataset, batch_size=128)
  (num_workers=0, its default); CSVIter over a generated 20000 x 100 CSV
  file (4 decimals) and a label file, batch 128; MNISTIter over generated
  idx files of 60000 28 x 28 images, batch 128 (the load, then one epoch);
  LibSVMIter over a generated 20000-line LibSVM file of 10000 columns with
  about 50 nonzeros a line (CSR batches), batch 128.
Ratios are ours over theirs (below 1: ours is faster).  MXNet runs with
OPENBLAS_CORETYPE=Haswell; interpreters come from MX_MXNET_PYTHON and
MX_TORCH_PYTHON (a missing one is skipped).
"""
import argparse
import os
import struct
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, repeat, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, 784), dtype=np.float32)
    Y = rng.integers(0, 10, rows).astype(np.float32)
    CSV, CSV_LABEL = folder + "/data.csv", folder + "/label.csv"
    IMAGES, LABELS = folder + "/images-idx3-ubyte", folder + "/labels-idx1-ubyte"
    LIBSVM = folder + "/data.libsvm"
""") + WORKER_TIMER

# The same loop for MXNet's iterators and ours (``io`` is mx.io or mxnet.io).
_MX_LOOP = textwrap.dedent("""
    def epoch(it):
        it.reset()
        for b in it:
            b.data[0].wait_to_read()
            b.label[0].wait_to_read()

    def cases(io):
        seq = io.NDArrayIter(X, Y, batch_size=128)
        shuf = io.NDArrayIter(X, Y, batch_size=128, shuffle=True)
        csv = io.CSVIter(data_csv=CSV, label_csv=CSV_LABEL, data_shape=(100,),
                         batch_size=128)
        load = lambda: io.MNISTIter(image=IMAGES, label=LABELS, batch_size=128,
                                    shuffle=False, silent=True)
        mnist = load()
        libsvm = io.LibSVMIter(data_libsvm=LIBSVM, data_shape=(10000,), batch_size=128)
        return {"ndarray_seq": best(lambda: epoch(seq)),
                "ndarray_shuffle": best(lambda: epoch(shuf)),
                "csv": best(lambda: epoch(csv)),
                "mnist_load": best(load),
                "mnist_epoch": best(lambda: epoch(mnist)),
                "libsvm": best(lambda: epoch(libsvm))}
""")

_OURS = _PRELUDE + _MX_LOOP + "import mx\nprint(json.dumps(cases(mx.io)))\n"
_MXNET = _PRELUDE + _MX_LOOP + "import mxnet\nprint(json.dumps(cases(mxnet.io)))\n"
_TORCH = _PRELUDE + textwrap.dedent("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.set_num_threads(2)
    ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))
    def epoch(loader):
        for x, y in loader:
            pass
    print(json.dumps({
        "ndarray_seq": best(lambda: epoch(DataLoader(ds, batch_size=128))),
        "ndarray_shuffle": best(lambda: epoch(DataLoader(ds, batch_size=128, shuffle=True))),
    }))
""")

CASES = [("ndarray_seq", "NDArrayIter 60000x784 f32, batch 128"),
         ("ndarray_shuffle", "NDArrayIter, shuffle"),
         ("csv", "CSVIter 20000x100, batch 128"),
         ("mnist_load", "MNISTIter load 60000 28x28"),
         ("mnist_epoch", "MNISTIter epoch, batch 128"),
         ("libsvm", "LibSVMIter 20000 lines x ~50 nnz, batch 128")]


def write_files(folder, rows, csv_rows):
    rng = np.random.default_rng(1)
    data = rng.uniform(-10, 10, size=(csv_rows, 100))
    np.savetxt(os.path.join(folder, "data.csv"), data, delimiter=",", fmt="%.4f")
    np.savetxt(os.path.join(folder, "label.csv"), rng.integers(0, 10, csv_rows), fmt="%d")
    images = rng.integers(0, 256, size=(rows, 28, 28), dtype=np.uint8)
    with open(os.path.join(folder, "images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">4I", 2051, rows, 28, 28) + images.tobytes())
    with open(os.path.join(folder, "labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">2I", 2049, rows)
                + rng.integers(0, 10, rows, dtype=np.uint8).tobytes())
    write_libsvm(os.path.join(folder, "data.libsvm"), csv_rows, rng)


def write_libsvm(path, rows, rng, columns=10000, nnz=50):
    """``rows`` lines of ``nnz`` sorted distinct zero-based indices (6 digits values)."""
    cols = [np.sort(rng.choice(columns, nnz, replace=False)) for _ in range(rows)]
    values = rng.uniform(-1, 1, size=(rows, nnz))
    labels = rng.integers(0, 2, rows)
    with open(path, "w") as f:
        for label, c, v in zip(labels, cols, values):
            f.write(f"{label} " + " ".join(f"{i}:{x:.6f}" for i, x in zip(c, v)) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rows, csv_rows, repeat = (6000, 2000, 1) if args.quick else (60000, 20000, args.repeat)
    mxnet_py = os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python")
    torch_py = os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python")
    with tempfile.TemporaryDirectory() as folder:
        write_files(folder, rows, csv_rows)
        argv_ = (rows, repeat, folder)
        ours = run(sys.executable, _OURS, argv_)
        mxnet = run(mxnet_py, _MXNET, argv_, env=dict(os.environ, OPENBLAS_CORETYPE="Haswell"))
        torch = run(torch_py, _TORCH, argv_)
    print(f"one epoch, best of {repeat} runs, CPU ({os.cpu_count()} cores)\n")
    fmt = lambda r, k: "-" if not r or k not in r else f"{r[k] * 1e3:.1f} ms"      # noqa: E731
    ratio = lambda r, k: "-" if not r or k not in r else f"{ours[k] / r[k]:.2f}"    # noqa: E731
    table = [("case", "ours", "MXNet 1.9.1", "PyTorch", "ours/MXNet", "ours/PyTorch")]
    for key, label in CASES:
        table.append((label, fmt(ours, key), fmt(mxnet, key), fmt(torch, key),
                      ratio(mxnet, key), ratio(torch, key)))
    print(format_table(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
