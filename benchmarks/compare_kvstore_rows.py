"""row_sparse on dist_sync, 2 workers + 1 server on this machine, SGD on
the server (lazy update): each iteration every worker pushes K rows of a
(ROWS, COLS) float32 key and row_sparse_pulls K rows, against MXNet 1.9.1's
ps-lite running the same loop, and against the dense push + pull of the
whole key (what a store that moves dense arrays only has to do).

    MX_MXNET_PYTHON=/tmp/mxnet-venv/bin/python \\
        .venv/bin/python benchmarks/compare_kvstore_rows.py [--iters N] [--rows R] [--k K]

MXNet's roles are started by compare_kvstore_dist.py's helper
(DMLC_ROLE / DMLC_PS_ROOT_URI / DMLC_PS_ROOT_PORT, OPENBLAS_CORETYPE=Haswell).
"""
import argparse
import os
import sys
import tempfile
import textwrap

from compare_kvstore_dist import _run, _run_mxnet

COLS = 64

_LOOP = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import mx
    iters, mode = int(sys.argv[1]), sys.argv[2]
    R, C, K = {rows}, {cols}, {k}
    kv = mx.kv.create("dist_sync")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01))
    rng = np.random.RandomState(kv.rank)
    ids = [np.sort(rng.choice(R, K, replace=False)) for _ in range(4)]
    if mode == "rows":
        kv.init(0, mx.nd.ones((R, C)).tostype("row_sparse"))
        grads = [mx.nd.sparse.row_sparse_array((np.ones((K, C), np.float32), i), shape=(R, C))
                 for i in ids]
        rids = [mx.nd.array(i, dtype="int64") for i in ids]
        out = mx.nd.sparse.zeros("row_sparse", (R, C))
    else:
        kv.init(0, mx.nd.ones((R, C)))
        grad, out = mx.nd.ones((R, C)), mx.nd.zeros((R, C))

    def step(i):
        if mode == "rows":
            kv.push(0, grads[i % 4])
            kv.row_sparse_pull(0, out=out, row_ids=rids[i % 4])
        else:
            kv.push(0, grad)
            kv.pull(0, out=out)
        out.wait_to_read()
    for i in range(3):
        step(i)
    kv._barrier()
    t = time.perf_counter()
    for i in range(iters):
        step(i)
    dt = (time.perf_counter() - t) / iters
    if mode == "rows":
        assert out.indices.asnumpy().tolist() == ids[(iters - 1) % 4].tolist()
    if kv.rank == 0:
        print("RESULT " + json.dumps({{"seconds": dt}}))
""")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=1000, help="rows pushed and pulled")
    args = parser.parse_args()
    if not 0 < args.k <= args.rows:
        parser.error(f"--k {args.k}: must be in 1..--rows ({args.rows})")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "loop.py")
        with open(script, "w") as f:
            f.write(_LOOP.format(rows=args.rows, cols=COLS, k=args.k))
        launch = [sys.executable, "-m", "mx_kvstore.launch", "-n", "2", "-s", "1",
                  sys.executable, script, str(args.iters)]
        rows = [("mx: push K rows + row_sparse_pull K rows", _run(launch + ["rows"])),
                ("mx: dense push + pull of the whole key", _run(launch + ["dense"]))]
        mxnet = os.environ.get("MX_MXNET_PYTHON")
        if mxnet and os.path.exists(mxnet):
            rows.append(("MXNet 1.9.1 ps-lite: push K rows + row_sparse_pull K rows",
                          _run_mxnet(mxnet, script, [str(args.iters), "rows"], port=9393)))
    print(f"dist_sync, 2 workers + 1 server, SGD on the server; key {args.rows} x {COLS} "
          f"float32 ({args.rows * COLS * 4 / 1e6:.1f} MB), K = {args.k} rows "
          f"({args.k * COLS * 4 / 1e6:.2f} MB); {args.iters} iterations")
    first = rows[0][1]
    for name, t in rows:
        print(f"{name:60s} {t * 1e3:8.2f} ms  {t / first:6.2f}x mx rows")
    if len(rows) < 3:
        print("MXNet 1.9.1 ps-lite: skipped (set MX_MXNET_PYTHON)")


if __name__ == "__main__":
    main()
