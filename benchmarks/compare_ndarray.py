"""NDArray side by side with NumPy (same process) and MXNet 1.9.1 (its own
virtual environment, run as a subprocess when present: it needs numpy<1.24).

    python benchmarks/compare_ndarray.py [--quick] [--mxnet-python PATH]

1. per-op overhead: ``c = a + b`` on shape (1,), N times, then one wait;
   target under 5 us per op (MXNet 1.9.1 from PyPI: about 24 us here);
2. ``x + y`` on 10M float32: throughput in GB/s (3 x 40 MB moved); target
   at least 1.2x NumPy's ``np.add(x, y, out=z)``;
3. ``sum`` over axis 1 and over axis 0 of a 4096 x 4096 float32 array
   against ``np.sum`` (ours accumulates in float64);
4. ``dot`` of two 1024 x 1024 float32 matrices: GFLOP/s, target at least
   0.95x NumPy's ``a @ b``.

Best of R runs.  MXNet's figures come from ``--mxnet-python`` (default:
$MX_MXNET_PYTHON or /tmp/mxnet-venv/bin/python), skipped when absent.
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx_ndarray as nd

from benchmarks.common import format_table

OVERHEAD_TARGET_US = 5.0
THROUGHPUT_TARGET = 1.2
BIG = 10_000_000

# Runs in MXNet's interpreter; prints {"overhead_us": ..., "add_s": ...}.
_MXNET_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import mxnet as mx
    n, repeat, big = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    a, b = mx.nd.ones((1,)), mx.nd.ones((1,))
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            c = a + b
        c.wait_to_read()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    x, y = mx.nd.ones((big,)), mx.nd.ones((big,))
    add = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        z = x + y
        z.wait_to_read()
        add = min(add, time.perf_counter() - t)
    print(json.dumps({"overhead_us": best, "add_s": add}))
""")


def best_of(repeat, fn):
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def ours(n, repeat, big, sum_n, dot_n):
    a, b = nd.ones((1,)), nd.ones((1,))

    def loop():
        for _ in range(n):
            c = a + b
        c.wait_to_read()

    loop()
    x, y = nd.ones((big,)), nd.ones((big,))
    (x + y).wait_to_read()
    m = nd.array(np.random.default_rng(0).random((sum_n, sum_n), dtype=np.float32))
    g = nd.array(np.random.default_rng(1).random((dot_n, dot_n), dtype=np.float32))
    nd.dot(g, g).wait_to_read()
    return {"overhead_us": best_of(repeat, loop) / n * 1e6,
            "add_s": best_of(repeat, lambda: (x + y).wait_to_read()),
            "sum1_s": best_of(repeat, lambda: nd.sum(m, axis=1).wait_to_read()),
            "sum0_s": best_of(repeat, lambda: nd.sum(m, axis=0).wait_to_read()),
            "dot_s": best_of(repeat, lambda: nd.dot(g, g).wait_to_read())}


def numpy_ref(n, repeat, big, sum_n, dot_n):
    a, b = np.ones(1, np.float32), np.ones(1, np.float32)

    def loop():
        for _ in range(n):
            np.add(a, b)

    x, y, z = (np.ones(big, np.float32) for _ in range(3))
    m = np.random.default_rng(0).random((sum_n, sum_n), dtype=np.float32)
    g = np.random.default_rng(1).random((dot_n, dot_n), dtype=np.float32)
    return {"overhead_us": best_of(repeat, loop) / n * 1e6,
            "add_s": best_of(repeat, lambda: np.add(x, y, out=z)),
            "sum1_s": best_of(repeat, lambda: np.sum(m, axis=1)),
            "sum0_s": best_of(repeat, lambda: np.sum(m, axis=0)),
            "dot_s": best_of(repeat, lambda: g @ g)}


def mxnet_ref(python, n, repeat, big):
    if not python or not os.path.exists(python):
        return None
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    proc = subprocess.run([python, "-c", _MXNET_SCRIPT, str(n), str(repeat), str(big)],
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        print(f"(MXNet reference failed: {proc.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    args = parser.parse_args(argv)
    n, repeat, big, sum_n, dot_n = ((2000, 2, 100_000, 256, 128) if args.quick
                                    else (50_000, 7, BIG, 4096, 1024))
    us, np_ = ours(n, repeat, big, sum_n, dot_n), numpy_ref(n, repeat, big, sum_n, dot_n)
    mx_ = mxnet_ref(args.mxnet_python, n, repeat, big)
    gbs = lambda r: 3 * big * 4 / r["add_s"] / 1e9
    rows = [("case", "ours", "NumPy", "MXNet 1.9.1", "target", "result"),
            ("c = a + b on (1,), per op", f"{us['overhead_us']:.2f} us",
             f"{np_['overhead_us']:.2f} us (sync)",
             f"{mx_['overhead_us']:.2f} us" if mx_ else "-", f"< {OVERHEAD_TARGET_US:g} us",
             "PASS" if us["overhead_us"] < OVERHEAD_TARGET_US else "MISS"),
            (f"x + y on {big} float32", f"{gbs(us):.1f} GB/s", f"{gbs(np_):.1f} GB/s",
             f"{gbs(mx_):.1f} GB/s" if mx_ else "-", f">= {THROUGHPUT_TARGET:g}x NumPy",
             f"{gbs(us) / gbs(np_):.2f}x " +
             ("PASS" if gbs(us) / gbs(np_) >= THROUGHPUT_TARGET else "MISS"))]
    for axis in (1, 0):
        key = f"sum{axis}_s"
        rows.append((f"sum over axis {axis} of {sum_n}x{sum_n} float32",
                     f"{us[key] * 1e3:.2f} ms", f"{np_[key] * 1e3:.2f} ms", "-", "-",
                     f"{np_[key] / us[key]:.2f}x NumPy's speed"))
    gflops = lambda r: 2 * dot_n ** 3 / r["dot_s"] / 1e9
    ratio = gflops(us) / gflops(np_)
    rows.append((f"dot {dot_n}x{dot_n} float32", f"{gflops(us):.1f} GFLOP/s",
                 f"{gflops(np_):.1f} GFLOP/s", "-", ">= 0.95x NumPy",
                 f"{ratio:.2f}x " + ("PASS" if ratio >= 0.95 else "MISS")))
    print(f"best of {repeat} runs\n")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
