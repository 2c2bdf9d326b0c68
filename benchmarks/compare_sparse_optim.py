"""Lazy sparse optimizer updates side by side: ours (``import mx``) and
MXNet 1.9.1, each in its own interpreter, one after the other.

    python benchmarks/compare_sparse_optim.py [--quick] [--mxnet-python PATH]

An embedding table of R x 64 float32 (R = 10^6; 10^4 with --quick) and a
row_sparse gradient touching 1% of its rows (sorted, unique).  Each side
times, on that table and in place (out=weight):
  - sgd_update, sgd_mom_update and adam_update with the row_sparse
    gradient and lazy_update=True (only the gradient's rows change);
  - sgd_mom_update with lazy_update=False (every row's standard step);
  - the dense update of the same table with a dense gradient.
Printed: milliseconds per step (best of N, ended by a wait), ours over
MXNet (below 1: ours is faster) and, per side, dense over lazy (how much
faster the lazy step is than the dense one; the target is >= 10x for SGD).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

# The same script serves ours and MXNet: `import mx` or `import mxnet as mx`.
_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, width, repeat = int(sys.argv[1]), 64, int(sys.argv[2])
    mx = __import__(sys.argv[3])
    nd = mx.nd
    rng = np.random.default_rng(0)
    touched = np.sort(rng.choice(rows, rows // 100, replace=False)).astype(np.int64)
    gdata = rng.standard_normal((touched.size, width), dtype=np.float32)
    w = nd.array(rng.standard_normal((rows, width), dtype=np.float32))
    states = [nd.zeros((rows, width)) for _ in range(2)]
    g = nd.sparse.row_sparse_array((gdata, touched), shape=(rows, width), dtype="float32")
    gd = g.tostype("default")
    nd.waitall()
    args = dict(lr=0.01, wd=0.0, out=w)
    def step(op, grad, **kw):
        n = {"sgd_update": 0, "sgd_mom_update": 1, "adam_update": 2}[op]
        return lambda: (getattr(nd, op)(w, grad, *states[:n], **args, **kw), w.wait_to_read())
""") + WORKER_TIMER + textwrap.dedent("""
    print(json.dumps({
        "sgd_lazy": best(step("sgd_update", g, lazy_update=True)),
        "sgd_dense": best(step("sgd_update", gd)),
        "mom_lazy": best(step("sgd_mom_update", g, momentum=0.9, lazy_update=True)),
        "mom_std": best(step("sgd_mom_update", g, momentum=0.9, lazy_update=False)),
        "mom_dense": best(step("sgd_mom_update", gd, momentum=0.9)),
        "adam_lazy": best(step("adam_update", g, lazy_update=True)),
        "adam_dense": best(step("adam_update", gd)),
    }))
""")

CASES = [("sgd_lazy", "sgd_update, row_sparse grad, lazy"),
         ("sgd_dense", "sgd_update, dense grad"),
         ("mom_lazy", "sgd_mom_update, row_sparse grad, lazy"),
         ("mom_std", "sgd_mom_update, row_sparse grad, lazy_update=False"),
         ("mom_dense", "sgd_mom_update, dense grad"),
         ("adam_lazy", "adam_update, row_sparse grad, lazy"),
         ("adam_dense", "adam_update, dense grad")]
SPEEDUPS = [("sgd_dense", "sgd_lazy", "sgd_update"), ("mom_dense", "mom_lazy", "sgd_mom_update"),
            ("adam_dense", "adam_lazy", "adam_update")]


def table(ours, mxnet):
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.3f} ms"  # noqa: E731
    rows = [("case", "ours", "MXNet 1.9.1", "ours/MXNet")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key),
                     "-" if ours is None or mxnet is None else f"{ours[key] / mxnet[key]:.2f}"))
    speed = [("dense step / lazy step", "ours", "MXNet 1.9.1")]
    for dense, lazy, name in SPEEDUPS:
        speed.append((name, *["-" if r is None else f"{r[dense] / r[lazy]:.1f}x"
                              for r in (ours, mxnet)]))
    return format_table(rows) + "\n\n" + format_table(speed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (10**4, 2) if args.quick else (10**6, 20)
    env = dict(os.environ, MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0", OPENBLAS_CORETYPE="Haswell")
    ours = run(sys.executable, _SCRIPT, sizes + ("mx",), env=env)
    mxnet = run(args.mxnet_python, _SCRIPT, sizes + ("mxnet",), env=env)
    print(f"{sizes[0]} x 64 float32 table, row_sparse gradient on 1% of the rows; in place; "
          f"best of {sizes[1]} steps, CPU ({os.cpu_count()} cores)\n")
    print(table(ours, mxnet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
