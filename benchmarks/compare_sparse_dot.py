"""Sparse dot side by side: ours (``import mx``), MXNet 1.9.1 and SciPy,
each in its own interpreter, run one after another.

    python benchmarks/compare_sparse_dot.py [--quick] [--mxnet-python PATH]

Cases (float32; issue 16's target): a 10^5 x 10^4 csr matrix with 100
entries per row times a 10^4 x 64 dense matrix (csr x dense -> dense),
and the transposed product of the same csr with a 10^5 x 64 dense matrix
(csr.T x dense -> row_sparse in ours and MXNet; SciPy gives dense, from
its CSC view).  Ratios are ours over theirs (below 1: ours is faster);
best of N runs, CPU, each side on the threads it uses by default.
MXNet runs with OPENBLAS_CORETYPE=Haswell.
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

# The same csr in every interpreter: per row, one random column in each of
# `per_row` equal bands of the columns (distinct and sorted).
_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, cols, per_row, width, repeat = map(int, sys.argv[1:6])
    rng = np.random.default_rng(0)
    band = cols // per_row
    indices = (rng.integers(0, band, (rows, per_row)) + np.arange(per_row) * band).ravel()
    indptr = np.arange(rows + 1, dtype=np.int64) * per_row
    data = rng.standard_normal(rows * per_row, dtype=np.float32)
    W = rng.standard_normal((cols, width), dtype=np.float32)
    G = rng.standard_normal((rows, width), dtype=np.float32)
""") + WORKER_TIMER

_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    mx = __import__(sys.argv[6])
    nd = mx.nd
    csr = nd.sparse.csr_matrix((data, indices, indptr), shape=(rows, cols))
    w, g = nd.array(W), nd.array(G)
    out = nd.dot(csr, w)
    check = float(np.abs(out.asnumpy()[:4]).sum())
    print(json.dumps({
        "csr_dns": best(lambda: nd.dot(csr, w).wait_to_read()),
        "csrT_dns": best(lambda: nd.dot(csr, g, transpose_a=True).wait_to_read()),
        "check": check,
    }))
""")

_SCIPY_SCRIPT = _PRELUDE + textwrap.dedent("""
    import scipy.sparse as sp
    csr = sp.csr_matrix((data, indices, indptr), shape=(rows, cols))
    check = float(np.abs((csr @ W)[:4]).sum())
    print(json.dumps({
        "csr_dns": best(lambda: csr @ W),
        "csrT_dns": best(lambda: csr.T @ G),
        "check": check,
    }))
""")

CASES = [("csr_dns", "dot(csr, dense) -> dense"),
         ("csrT_dns", "dot(csr.T, dense) -> row_sparse (SciPy: dense)")]


def table(ours, mxnet, scipy):
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.1f} ms"  # noqa: E731
    ratio = lambda r, k: "-" if r is None or ours is None else f"{ours[k] / r[k]:.2f}"  # noqa
    rows = [("case", "ours", "MXNet 1.9.1", "SciPy", "ours/MXNet", "ours/SciPy")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(scipy, key),
                     ratio(mxnet, key), ratio(scipy, key)))
    return format_table(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (2000, 500, 10, 64, 1) if args.quick else (100_000, 10_000, 100, 64, 7)
    quiet = dict(os.environ, MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0",
                 OPENBLAS_CORETYPE="Haswell")
    ours = run(sys.executable, _MX_SCRIPT, sizes + ("mx",), env=quiet)
    mxnet = run(args.mxnet_python, _MX_SCRIPT, sizes + ("mxnet",), env=quiet)
    scipy = run(sys.executable, _SCIPY_SCRIPT, sizes)
    checks = {name: r["check"] for name, r in (("ours", ours), ("MXNet", mxnet),
                                               ("SciPy", scipy)) if r}
    print(f"csr {sizes[0]} x {sizes[1]}, {sizes[2]} entries per row, times {sizes[3]} "
          f"columns, float32; best of {sizes[4]} runs, CPU ({os.cpu_count()} cores)")
    print(f"(|first 4 rows| of each side's csr x dense: {checks})\n")
    print(table(ours, mxnet, scipy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
