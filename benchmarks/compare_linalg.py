"""Batched linalg side by side: ours (``import mx``: mx.nd.linalg), NumPy
and PyTorch (its own virtual environment, run as a subprocess when
present), CPU, float32.

    python benchmarks/compare_linalg.py [--quick] [--torch-python PATH]

Cases: gemm2 on 4096 pairs of 32 x 32 matrices and on 64 pairs of 256 x 256;
potrf and inverse on 4096 SPD 32 x 32 matrices and on 64 SPD 256 x 256.
NumPy: ``a @ b``, ``np.linalg.cholesky``, ``np.linalg.inv``; PyTorch:
``torch.matmul``, ``torch.linalg.cholesky``, ``torch.linalg.inv``.  Best of
R runs, each ending when the result is ready.
"""
import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

SHAPES = [(4096, 32), (64, 256)]

# Every worker: arguments, a best-of-R timer, float32 inputs from NumPy.
_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    shapes, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
""") + WORKER_TIMER + textwrap.dedent("""
    def inputs(batch, n):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((batch, n, n)).astype("float32")
        b = rng.standard_normal((batch, n, n)).astype("float32")
        spd = (a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype="float32")).astype("float32")
        return a, b, spd
    res = {}
""")

_SCRIPTS = {
    "ours": _PRELUDE + textwrap.dedent("""
        import mx
        L = mx.nd.linalg
        for batch, n in shapes:
            a, b, spd = (mx.nd.array(x) for x in inputs(batch, n))
            k = f"{batch}x{n}"
            res["gemm2 " + k] = best(lambda: L.gemm2(a, b).wait_to_read())
            res["potrf " + k] = best(lambda: L.potrf(spd).wait_to_read())
            res["inverse " + k] = best(lambda: L.inverse(spd).wait_to_read())
        print(json.dumps(res))
    """),
    "numpy": _PRELUDE + textwrap.dedent("""
        for batch, n in shapes:
            a, b, spd = inputs(batch, n)
            k = f"{batch}x{n}"
            res["gemm2 " + k] = best(lambda: a @ b)
            res["potrf " + k] = best(lambda: np.linalg.cholesky(spd))
            res["inverse " + k] = best(lambda: np.linalg.inv(spd))
        print(json.dumps(res))
    """),
    "torch": _PRELUDE + textwrap.dedent("""
        import torch
        for batch, n in shapes:
            a, b, spd = (torch.from_numpy(x) for x in inputs(batch, n))
            k = f"{batch}x{n}"
            res["gemm2 " + k] = best(lambda: torch.matmul(a, b))
            res["potrf " + k] = best(lambda: torch.linalg.cholesky(spd))
            res["inverse " + k] = best(lambda: torch.linalg.inv(spd))
        print(json.dumps(res))
    """),
}



def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    shapes = [(64, 16), (4, 64)] if args.quick else SHAPES
    repeat = 1 if args.quick else 5
    argv_ = [json.dumps(shapes), repeat]
    ours = run(sys.executable, _SCRIPTS["ours"], argv_)
    numpy = run(sys.executable, _SCRIPTS["numpy"], argv_)
    torch = run(args.torch_python, _SCRIPTS["torch"], argv_)
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.2f} ms"     # noqa: E731
    ratio = lambda r, k: "-" if r is None or ours is None else f"{r[k] / ours[k]:.2f}"  # noqa
    rows = [("case (batch x n, float32)", "ours", "NumPy", "PyTorch", "NumPy / ours",
             "PyTorch / ours")]
    for key in (ours or numpy or {}):
        rows.append((key, fmt(ours, key), fmt(numpy, key), fmt(torch, key), ratio(numpy, key),
                     ratio(torch, key)))
    print(format_table(rows))


if __name__ == "__main__":
    main()
