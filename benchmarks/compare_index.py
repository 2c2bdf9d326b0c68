"""Histogram, diagonal and creation operators side by side: ours (``import
mx``), PyTorch CPU and NumPy, each in its own interpreter (PyTorch from its
own virtual environment, when present), run as subprocesses one after
another.

    python benchmarks/compare_index.py [--quick] [--torch-python PATH]

Cases (float32): histogram of 1e6 normal values into 100 uniform bins over
(-3, 3) (PyTorch: histc) and into 100 given edges (PyTorch: histogram);
diag of a 2000 x 2000 matrix (extract) and of a 2000 vector (a matrix);
eye 2000 x 2000; linspace of 1e6 values; boolean_mask selecting about half
of 100000 rows of 64 by a float mask (NumPy, PyTorch: indexing by
mask != 0).  Ratios are ours over theirs (below 1: ours is faster).  Best
of R runs.
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
    n, side, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)
    H = rng.standard_normal(n, dtype=np.float32)
    EDGES = np.linspace(-3, 3, 101).astype(np.float32)
    M = rng.standard_normal((side, side), dtype=np.float32)
    V = rng.standard_normal(side, dtype=np.float32)
    B = rng.standard_normal((n // 10, 64), dtype=np.float32)
    MASK = (rng.random(n // 10) < 0.5).astype(np.float32)
""") + WORKER_TIMER

_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    import mx
    nd = mx.nd
    h, edges, m, v = nd.array(H), nd.array(EDGES), nd.array(M), nd.array(V)
    b, mask = nd.array(B), nd.array(MASK)
    def hist(bins, **kw):
        c, e = nd.histogram(h, bins=bins, **kw)
        c.wait_to_read()
    print(json.dumps({
        "hist_uniform": best(lambda: hist(100, range=(-3, 3))),
        "hist_edges": best(lambda: hist(edges)),
        "diag_extract": best(lambda: nd.diag(m).wait_to_read()),
        "diag_make": best(lambda: nd.diag(v).wait_to_read()),
        "eye": best(lambda: nd.eye(side).wait_to_read()),
        "linspace": best(lambda: nd.linspace(0, 1, n).wait_to_read()),
        "boolean_mask": best(lambda: mx.nd.contrib.boolean_mask(b, mask).wait_to_read()),
    }))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    h, edges, m, v, b = (torch.from_numpy(a) for a in (H, EDGES, M, V, B))
    mask = torch.from_numpy(MASK)
    print(json.dumps({
        "hist_uniform": best(lambda: torch.histc(h, 100, -3, 3)),
        "hist_edges": best(lambda: torch.histogram(h, edges)),
        # diagonal() is a view: clone() makes the copy diag makes.
        "diag_extract": best(lambda: torch.diag(m).clone()),
        "diag_make": best(lambda: torch.diag(v)),
        "eye": best(lambda: torch.eye(side)),
        "linspace": best(lambda: torch.linspace(0, 1, n)),
        "boolean_mask": best(lambda: b[mask != 0]),
    }))
""")

_NUMPY_SCRIPT = _PRELUDE + textwrap.dedent("""
    print(json.dumps({
        "hist_uniform": best(lambda: np.histogram(H, 100, (-3, 3))),
        "hist_edges": best(lambda: np.histogram(H, EDGES)),
        "diag_extract": best(lambda: np.diag(M).copy()),
        "diag_make": best(lambda: np.diag(V)),
        "eye": best(lambda: np.eye(side, dtype=np.float32)),
        "linspace": best(lambda: np.linspace(0, 1, n).astype(np.float32)),
        "boolean_mask": best(lambda: B[MASK != 0]),
    }))
""")

CASES = [("hist_uniform", "histogram 1e6, 100 uniform bins"),
         ("hist_edges", "histogram 1e6, 101 given edges"),
         ("diag_extract", "diag of 2000 x 2000"),
         ("diag_make", "diag of a 2000 vector"),
         ("eye", "eye 2000 x 2000"),
         ("linspace", "linspace 1e6"),
         ("boolean_mask", "boolean_mask, half of 100000 x 64 rows")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (10000, 100, 1) if args.quick else (1000000, 2000, 7)
    ours = run(sys.executable, _MX_SCRIPT, sizes)
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes)
    numpy = run(sys.executable, _NUMPY_SCRIPT, sizes)
    print(f"best of {sizes[2]} runs, CPU\n")
    print(ratio_table(CASES, ours, torch, numpy, digits=3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
