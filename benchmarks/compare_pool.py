"""The kernels' thread pool (mx_ops.core._pool) under the calling patterns
that used to stall it, side by side with PyTorch's CPU operators on as many
threads (where its interpreter exists: MX_TORCH_PYTHON).

    python benchmarks/compare_pool.py [--repeat N] [--burst N] [--gap S] [--only TEXT]

Cases (float32, ours through mx_ops.invoke into preallocated outputs,
PyTorch through its out= forms where it has them): relu and add of 1M
elements, softmax (1024, 1000), softmax_cross_entropy (1024, 1000),
FullyConnected (128, 512) x (512, 512) + bias, and two batches that linalg
splits across the threads, each call well under a millisecond: potrf of
4096 SPD 8 x 8 matrices, extractdiag of 4096 32 x 32.  Columns, in ms:
  warm med / warm max   every call of `repeat` bursts of `burst` calls back
                        to back (a training loop's operators);
  1st med / 1st max     the first call after `gap` seconds idle (the
                        workers have gone to sleep: a wake-up stall shows
                        here);
  2nd med / 2nd max     the call right after it.
Both sides run the same timing code (_PROTOCOL) in their own process."""
import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import format_table, run_json_script
from benchmarks.torch_worker import TORCH_PYTHON

# The timing protocol, the same text in both processes: `cases` maps a
# name to a function that runs one call.
_PROTOCOL = r"""
import json, statistics, sys, time

def measure(cases, repeat, burst, gap, only=""):
    out = {}
    for name, call in cases.items():
        if only not in name:
            continue
        for _ in range(5):
            call()
        warm, first, second = [], [], []
        for _ in range(repeat):
            for _ in range(burst):
                t = time.perf_counter(); call(); warm.append(time.perf_counter() - t)
        for _ in range(repeat):
            time.sleep(gap)
            t = time.perf_counter(); call(); t1 = time.perf_counter(); call()
            t2 = time.perf_counter()
            first.append(t1 - t)
            second.append(t2 - t1)
        out[name] = {k: [statistics.median(v) * 1e3, max(v) * 1e3]
                     for k, v in (("warm", warm), ("1st", first), ("2nd", second))}
    return out
"""

_TORCH = _PROTOCOL + r"""
import torch
import torch.nn.functional as F

repeat, burst, gap, threads = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
only = sys.argv[5]
torch.set_num_threads(threads)
torch.manual_seed(0)
n = 1 << 20
a, b, y = torch.randn(n), torch.randn(n), torch.empty(n)
x = torch.randn(1024, 1000)
sm = torch.empty(1024, 1000)
label = torch.randint(0, 1000, (1024,))
fx, fw, fb, fy = torch.randn(128, 512), torch.randn(512, 512), torch.randn(512), torch.empty(128, 512)
sq, sq32 = torch.randn(4096, 8, 8), torch.randn(4096, 32, 32)
spd = sq @ sq.transpose(1, 2) + 8 * torch.eye(8)
lo, diag = torch.empty_like(spd), torch.empty(4096, 32)
with torch.no_grad():
    res = measure({
        "relu 1M": lambda: torch.clamp(a, min=0, out=y),
        "add 1M": lambda: torch.add(a, b, out=y),
        "softmax (1024, 1000)": lambda: torch.ops.aten._softmax.out(x, -1, False, out=sm),
        "softmax_cross_entropy (1024, 1000)": lambda: F.cross_entropy(x, label, reduction="sum"),
        "FullyConnected 128x512x512": lambda: torch.addmm(fb, fx, fw.t(), out=fy),
        "linalg potrf 4096x8x8": lambda: torch.linalg.cholesky(spd, out=lo),
        "linalg extractdiag 4096x32x32": lambda: diag.copy_(torch.diagonal(sq32, 0, -2, -1)),
    }, repeat, burst, gap, only)
print(json.dumps({"version": torch.__version__, "threads": torch.get_num_threads(), "cases": res}))
"""


def ours(repeat, burst, gap, only=""):
    """(results, threads): ours measured in this process."""
    import numpy as np
    from mx_ops import invoke
    from mx_ops.ops.nn.convolution import max_threads
    namespace = {}
    exec(_PROTOCOL, namespace)
    rng = np.random.default_rng(0)
    n = 1 << 20
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    y = np.empty(n, np.float32)
    x = rng.standard_normal((1024, 1000), dtype=np.float32)
    sm = np.empty_like(x)
    label = rng.integers(0, 1000, 1024).astype(np.float32)
    loss = np.empty(1, np.float32)
    fx = rng.standard_normal((128, 512), dtype=np.float32)
    fw = rng.standard_normal((512, 512), dtype=np.float32)
    fb = rng.standard_normal(512, dtype=np.float32)
    fy = np.empty((128, 512), np.float32)
    sq, sq32 = (rng.standard_normal((4096, n, n), dtype=np.float32) for n in (8, 32))
    spd = (sq @ sq.transpose(0, 2, 1) + 8 * np.eye(8, dtype=np.float32)).astype(np.float32)
    lo, diag = np.empty_like(spd), np.empty((4096, 32), np.float32)
    cases = {
        "relu 1M": lambda: invoke("relu", [a], out=y),
        "add 1M": lambda: invoke("elemwise_add", [a, b], out=y),
        "softmax (1024, 1000)": lambda: invoke("softmax", [x], out=sm, axis=-1),
        "softmax_cross_entropy (1024, 1000)":
            lambda: invoke("softmax_cross_entropy", [x, label], out=loss),
        "FullyConnected 128x512x512":
            lambda: invoke("FullyConnected", [fx, fw, fb], out=fy, num_hidden=512),
        "linalg potrf 4096x8x8": lambda: invoke("_linalg_potrf", [spd], out=lo),
        "linalg extractdiag 4096x32x32": lambda: invoke("_linalg_extractdiag", [sq32], out=diag),
    }
    return namespace["measure"](cases, repeat, burst, gap, only), max_threads()


def pool_settings():
    """The pool's settings, or a note when this build has no pool module."""
    try:
        from mx_ops.core import _pool
    except ImportError:
        return "no mx_ops.core._pool (OpenMP parallel_for, per-module teams)"
    s = _pool.settings()
    return f"pool: {s['threads']} threads, workers spin {s['spin_us']:g} us"


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--burst", type=int, default=20, help="calls back to back per burst")
    parser.add_argument("--gap", type=float, default=0.15, help="seconds idle before a 1st call")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--only", default="", help="run only the cases whose name holds this")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.burst < 1 or args.gap < 0:
        parser.error(f"--repeat and --burst must be 1 or more, --gap 0 or more; got "
                     f"{args.repeat}, {args.burst}, {args.gap}")
    mine, threads = ours(args.repeat, args.burst, args.gap, args.only)
    theirs = None if args.no_torch else run_json_script(
        TORCH_PYTHON, _TORCH, [args.repeat, args.burst, args.gap, threads, args.only],
        env={k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"})
    cols = ("warm", "1st", "2nd")
    header = ["case", "side"] + [f"{c} {s}" for c in cols for s in ("med", "max")]
    rows = [header]
    for name in mine:
        for side, res in (("ours", mine), ("PyTorch", theirs and theirs["cases"])):
            if res:
                rows.append([name, side] + [f"{v:.3f}" for c in cols for v in res[name][c]])
    print(format_table(rows))
    print(f"(ms; {os.cpu_count()} cpu cores; ours on {threads} threads, {pool_settings()}; "
          f"PyTorch {theirs['version'] + ' on ' + str(theirs['threads']) + ' threads' if theirs else 'not run'}; "
          f"{args.repeat} bursts of {args.burst} warm calls, {args.repeat} pairs after "
          f"{args.gap} s idle)")


if __name__ == "__main__":
    main()
