"""Sparse storage side by side: ours (``import mx``), MXNet 1.9.1 and SciPy,
each in its own interpreter, run one after another.

    python benchmarks/compare_sparse.py [--quick] [--mxnet-python PATH]

Cases (float32, an R x C matrix with 1% nonzeros): cast_storage dense ->
csr (SciPy: csr_matrix(dense)), csr -> dense (SciPy: toarray), dense ->
row_sparse with 1% of the rows kept, elemwise_add of two csr arrays (SciPy:
A + B), and a zero-preserving unary op (square) on csr.  Then the sparse
operators on a 10^5 x 10^4 csr with 1% nonzeros (built from its
components, no dense copy): broadcast_mul by a dense row vector (SciPy:
A.multiply(row)), elemwise_mul csr * dense on 10^4 x 10^3 (SciPy:
A.multiply(D)), and add_n of four 10^6 x 64 row_sparse arrays with 1% of
the rows each (no SciPy equivalent).  Ratios are ours over theirs (below 1:
ours is faster); best of N runs, CPU.
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, cols, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, cols), dtype=np.float32)
    X[rng.random((rows, cols)) >= 0.01] = 0
    Y = rng.standard_normal((rows, cols), dtype=np.float32)
    Y[rng.random((rows, cols)) >= 0.01] = 0
    R = rng.standard_normal((rows, cols), dtype=np.float32)
    R[rng.random(rows) >= 0.01] = 0
""") + WORKER_TIMER

# The same script serves ours and MXNet: `import mx` or `import mxnet as mx`.
_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    mx = __import__(sys.argv[4])
    nd = mx.nd
    x, y, r = nd.array(X), nd.array(Y), nd.array(R)
    cx, cy = x.tostype("csr"), y.tostype("csr")
    print(json.dumps({
        "dns_csr": best(lambda: nd.cast_storage(x, stype="csr").wait_to_read()),
        "csr_dns": best(lambda: nd.cast_storage(cx, stype="default").wait_to_read()),
        "dns_rsp": best(lambda: nd.cast_storage(r, stype="row_sparse").wait_to_read()),
        "csr_add": best(lambda: nd.elemwise_add(cx, cy).wait_to_read()),
        "csr_square": best(lambda: nd.square(cx).wait_to_read()),
    }))
""")

_SCIPY_SCRIPT = _PRELUDE + textwrap.dedent("""
    import scipy.sparse as sp
    cx, cy = sp.csr_matrix(X), sp.csr_matrix(Y)
    print(json.dumps({
        "dns_csr": best(lambda: sp.csr_matrix(X)),
        "csr_dns": best(lambda: cx.toarray()),
        "dns_rsp": None,
        "csr_add": best(lambda: cx + cy),
        "csr_square": best(lambda: cx.power(2)),
    }))
""")

_OPS_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    rows, cols, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)

    def random_csr(m, n):
        # 1% of each row: one random column in each run of 100 (sorted, distinct).
        per_row, step = max(1, n // 100), min(100, n)
        cols_ = np.arange(per_row) * step + rng.integers(0, step, (m, per_row))
        indptr = np.arange(m + 1, dtype=np.int64) * per_row
        return (rng.standard_normal(m * per_row, dtype=np.float32),
                cols_.ravel().astype(np.int64), indptr)

    A = random_csr(rows, cols)
    ROW = rng.standard_normal((1, cols), dtype=np.float32)
    B = random_csr(rows // 10, cols // 10)
    D = rng.standard_normal((rows // 10, cols // 10), dtype=np.float32)
    RSP_ROWS, RSP_WIDTH = 10**6 if rows >= 10**5 else 10**4, 64
    RSP = []
    for _ in range(4):
        idx = np.sort(rng.choice(RSP_ROWS, RSP_ROWS // 100, replace=False)).astype(np.int64)
        RSP.append((rng.standard_normal((len(idx), RSP_WIDTH), dtype=np.float32), idx))
""") + WORKER_TIMER

_OPS_MX_SCRIPT = _OPS_PRELUDE + textwrap.dedent("""
    mx = __import__(sys.argv[4])
    nd = mx.nd
    a = nd.sparse.csr_matrix(A, shape=(rows, cols))
    row = nd.array(ROW)
    b = nd.sparse.csr_matrix(B, shape=(rows // 10, cols // 10))
    d = nd.array(D)
    rsp = [nd.sparse.row_sparse_array(r, shape=(RSP_ROWS, RSP_WIDTH)) for r in RSP]
    nd.waitall()
    print(json.dumps({
        "bcast_mul_row": best(lambda: nd.broadcast_mul(a, row).wait_to_read()),
        "mul_csr_dns": best(lambda: nd.elemwise_mul(b, d).wait_to_read()),
        "add_n_rsp": best(lambda: nd.add_n(*rsp).wait_to_read()),
    }))
""")

_OPS_SCIPY_SCRIPT = _OPS_PRELUDE + textwrap.dedent("""
    import scipy.sparse as sp
    a = sp.csr_matrix((A[0], A[1], A[2]), shape=(rows, cols))
    b = sp.csr_matrix((B[0], B[1], B[2]), shape=(rows // 10, cols // 10))
    print(json.dumps({
        "bcast_mul_row": best(lambda: a.multiply(ROW).tocsr()),
        "mul_csr_dns": best(lambda: b.multiply(D).tocsr()),
        "add_n_rsp": None,
    }))
""")

OPS_CASES = [("bcast_mul_row", "broadcast_mul csr (R x C) * row vector"),
             ("mul_csr_dns", "elemwise_mul csr * dense (R/10 x C/10)"),
             ("add_n_rsp", "add_n of 4 row_sparse (1% rows, 64 wide)")]

CASES = [("dns_csr", "cast_storage dense -> csr"),
         ("csr_dns", "cast_storage csr -> dense"),
         ("dns_rsp", "cast_storage dense -> row_sparse (1% rows)"),
         ("csr_add", "elemwise_add csr + csr"),
         ("csr_square", "square(csr), storage kept")]


def table(ours, mxnet, scipy, cases):
    fmt = lambda r, k: "-" if r is None or r.get(k) is None else f"{r[k] * 1e3:.2f} ms"  # noqa
    ratio = lambda r, k: ("-" if r is None or r.get(k) is None or ours is None  # noqa: E731
                          else f"{ours[k] / r[k]:.2f}")
    rows = [("case", "ours", "MXNet 1.9.1", "SciPy", "ours/MXNet", "ours/SciPy")]
    for key, label in cases:
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(scipy, key),
                     ratio(mxnet, key), ratio(scipy, key)))
    return format_table(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (200, 300, 1) if args.quick else (4000, 2000, 7)
    quiet = dict(os.environ, MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0",
                 OPENBLAS_CORETYPE="Haswell")
    ours = run(sys.executable, _MX_SCRIPT, sizes + ("mx",), env=quiet)
    mxnet = run(args.mxnet_python, _MX_SCRIPT, sizes + ("mxnet",), env=quiet)
    scipy = run(sys.executable, _SCIPY_SCRIPT, sizes)
    print(f"{sizes[0]} x {sizes[1]} float32, 1% nonzeros; best of {sizes[2]} runs, CPU\n")
    print(table(ours, mxnet, scipy, CASES))
    sizes = (2000, 1000, 1) if args.quick else (10**5, 10**4, 5)
    ours = run(sys.executable, _OPS_MX_SCRIPT, sizes + ("mx",), env=quiet)
    mxnet = run(args.mxnet_python, _OPS_MX_SCRIPT, sizes + ("mxnet",), env=quiet)
    scipy = run(sys.executable, _OPS_SCIPY_SCRIPT, sizes)
    rsp_rows = 10**6 if sizes[0] >= 10**5 else 10**4
    print(f"\nsparse operators, float32, 1% nonzeros: R x C = {sizes[0]} x {sizes[1]}, "
          f"row_sparse {rsp_rows} x 64; best of {sizes[2]} runs, CPU\n")
    print(table(ours, mxnet, scipy, OPS_CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
