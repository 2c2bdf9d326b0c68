"""An Embedding training step with a row_sparse weight gradient
(sparse_grad=True) against the dense-gradient step, ours and MXNet 1.9.1
side by side, each in its own interpreter, run one after another.

    python benchmarks/compare_sparse_grad.py [--quick] [--mxnet-python PATH]

The step (autograd, CPU, float32): a (10^5, 64) table, a batch of 512
indices (uniform), Embedding forward recorded, backward with a random head
gradient into the weight's gradient array (row_sparse with sparse_grad,
dense without), waited on.  The same script serves both sides (``import
mx`` or ``import mxnet as mx``).  Best of N runs; ratios below 1: ours is
faster.
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, dim, batch, repeat = map(int, sys.argv[1:5])
    mx = __import__(sys.argv[5])
    nd, ag = mx.nd, mx.autograd
    rng = np.random.default_rng(0)
    idx = nd.array(rng.integers(0, rows, batch).astype(np.float32))
    head = nd.array(rng.standard_normal((batch, dim), dtype=np.float32))
    table = nd.array(rng.standard_normal((rows, dim), dtype=np.float32))
""") + WORKER_TIMER + textwrap.dedent("""
    def step_fn(sparse):
        w = table.copy()
        w.attach_grad(stype="row_sparse" if sparse else "default")
        def step():
            with ag.record():
                y = nd.Embedding(idx, w, input_dim=rows, output_dim=dim, sparse_grad=sparse)
            y.backward(head)
            w.grad.wait_to_read()
        return step
    print(json.dumps({"sparse": best(step_fn(True)), "dense": best(step_fn(False))}))
""")

CASES = [("sparse", "Embedding step, row_sparse grad"),
         ("dense", "Embedding step, dense grad")]


def table(ours, mxnet):
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.3f} ms"  # noqa: E731
    rows = [("case", "ours", "MXNet 1.9.1", "ours/MXNet", "ours sparse/dense")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key),
                     "-" if ours is None or mxnet is None else f"{ours[key] / mxnet[key]:.2f}",
                     "-" if ours is None else f"{ours[key] / ours['dense']:.3f}"))
    return format_table(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (1000, 16, 64, 1) if args.quick else (100000, 64, 512, 20)
    env = dict(os.environ, MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0", OPENBLAS_CORETYPE="Haswell")
    ours = run(sys.executable, _SCRIPT, sizes + ("mx",), env=env)
    mxnet = run(args.mxnet_python, _SCRIPT, sizes + ("mxnet",), env=env)
    print(f"({sizes[0]}, {sizes[1]}) float32 table, batch of {sizes[2]} indices; forward + "
          f"backward, best of {sizes[3]} runs, CPU\n")
    print(table(ours, mxnet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
