"""Ordering and picking operators side by side: ours (``import mx``),
PyTorch CPU and NumPy, each in its own interpreter (PyTorch from its own
virtual environment, when present), run as subprocesses one after another.

    python benchmarks/compare_sort.py [--quick] [--repeat R] [--torch-python PATH]

Cases (float32): sort, argsort and topk (k=10, values and indices) along
the last axis of 1000 x 1000; sort of 1e6 flattened elements; take of
100000 rows of 64 and of 1e6 single elements (int64 indices); pick of one element in each of 100000
rows of 100.  The NumPy column is the composition computing the same thing
(topk: argpartition, then argsort of the k selected); ratios are ours over
theirs (below 1: ours is faster).  Best of R runs (7; more on a loaded
machine, where a few runs rarely include an undisturbed one).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, ratio_table, run_json_script as run

# What every worker script starts with: arguments, data and a best-of-R timer.
_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, cols, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, cols), dtype=np.float32)
    FLAT = rng.standard_normal(rows * cols, dtype=np.float32)
    TAB = rng.standard_normal((100 * rows, 64), dtype=np.float32)
    TIDX = rng.integers(0, 100 * rows, 100 * rows)
    VEC = rng.standard_normal(1000 * rows, dtype=np.float32)
    VIDX = rng.integers(0, 1000 * rows, 1000 * rows)
    P = rng.standard_normal((100 * rows, 100), dtype=np.float32)
    PIDX = rng.integers(0, 100, 100 * rows)
    K = 10
""") + WORKER_TIMER

_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    import mx
    nd = mx.nd
    x, flat, tab, p = nd.array(X), nd.array(FLAT), nd.array(TAB), nd.array(P)
    tidx = nd.array(TIDX, dtype="int64")
    vec, vidx = nd.array(VEC), nd.array(VIDX, dtype="int64")
    pidx = nd.array(PIDX, dtype="int64")
    def topk():
        v, i = nd.topk(x, k=K, ret_typ="both", dtype="int64")
        i.wait_to_read()
    print(json.dumps({
        "sort": best(lambda: nd.sort(x).wait_to_read()),
        "argsort": best(lambda: nd.argsort(x, dtype="int64").wait_to_read()),
        "topk": best(topk),
        "sort_flat": best(lambda: nd.sort(flat, axis=None).wait_to_read()),
        "take": best(lambda: nd.take(tab, tidx).wait_to_read()),
        "take_1d": best(lambda: nd.take(vec, vidx).wait_to_read()),
        "pick": best(lambda: nd.pick(p, pidx).wait_to_read()),
    }))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    x, flat, tab, p = (torch.from_numpy(a) for a in (X, FLAT, TAB, P))
    tidx, pidx = torch.from_numpy(TIDX), torch.from_numpy(PIDX)[:, None]
    vec, vidx = torch.from_numpy(VEC), torch.from_numpy(VIDX)
    print(json.dumps({
        "sort": best(lambda: torch.sort(x, dim=-1, stable=True)),
        "argsort": best(lambda: torch.argsort(x, dim=-1, stable=True)),
        "topk": best(lambda: torch.topk(x, K, dim=-1)),
        "sort_flat": best(lambda: torch.sort(flat, stable=True)),
        "take": best(lambda: torch.index_select(tab, 0, tidx)),
        "take_1d": best(lambda: torch.index_select(vec, 0, vidx)),
        "pick": best(lambda: torch.gather(p, 1, pidx)),
    }))
""")

_NUMPY_SCRIPT = _PRELUDE + textwrap.dedent("""
    def topk():
        part = np.argpartition(-X, K - 1, axis=-1)[:, :K]
        vals = np.take_along_axis(X, part, -1)
        o = np.argsort(-vals, axis=-1, kind="stable")
        return np.take_along_axis(vals, o, -1), np.take_along_axis(part, o, -1)
    print(json.dumps({
        "sort": best(lambda: np.sort(X, axis=-1)),
        "argsort": best(lambda: np.argsort(X, axis=-1)),
        "topk": best(topk),
        "sort_flat": best(lambda: np.sort(FLAT)),
        "take": best(lambda: np.take(TAB, TIDX, axis=0)),
        "take_1d": best(lambda: np.take(VEC, VIDX)),
        "pick": best(lambda: np.take_along_axis(P, PIDX[:, None], -1)[:, 0]),
    }))
""")

CASES = [("sort", "sort, 1000 x 1000, last axis"),
         ("argsort", "argsort, 1000 x 1000, last axis"),
         ("topk", "topk k=10 (values, indices), 1000 x 1000"),
         ("sort_flat", "sort, 1e6 flattened"),
         ("take", "take 100000 of 100000 x 64 rows"),
         ("take_1d", "take 1e6 of 1e6 elements (1-D)"),
         ("pick", "pick, 100000 x 100, last axis")]



def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=7, help="runs per case (best is kept)")
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    sizes = (100, 100, 1) if args.quick else (1000, 1000, args.repeat)
    ours = run(sys.executable, _MX_SCRIPT, sizes)
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes)
    numpy = run(sys.executable, _NUMPY_SCRIPT, sizes)
    print(f"best of {sizes[2]} runs, CPU\n")
    print(ratio_table(CASES, ours, torch, numpy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
