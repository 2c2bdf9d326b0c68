"""The pooled allocator side by side with its references, in one process.

    python benchmarks/compare_storage.py [--quick] [--repeat R]

1. recycled alloc + free of a 4 KiB block, from C (what NDArray pays) and
   from Python: target under 0.5 us per pair;
2. allocate 64 MiB, touch every page, free, in a loop: the pool against
   ``np.empty`` doing the same (its pages are faulted in every time): target
   at least 5x faster;
3. a random-size workload (sizes 1 B .. 1 MiB, half frees) under the Round
   pool: the bytes the pool holds (live + cached) at their highest, over the
   highest live bytes: target at most 2;
4. memory that returns: sizes 4 KiB .. 64 MiB (log-uniform, every page
   written, half frees), each pool type in a fresh process beside
   ``np.empty`` doing the same: process RSS above the bytes held (the pool's
   live + cached, or the live arrays) at its worst, target at most 1/8 of
   the peak held (or 16 MiB); and RSS above the start once nothing is in
   use (after ``empty_cache()``), target under 4 MiB.

Best of R runs, median in brackets.  The script only reports; it exits 0.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx_storage
from mx_engine import cpu
from mx_storage import _storage

from benchmarks.common import format_table

PAIR_TARGET_US = 0.5
TOUCH_TARGET_RATIO = 5.0
BACKING_TARGET = 2.0
BIG = 64 << 20
RSS_LEFT_TARGET = 4 << 20
RSS_EXCESS_SHARE = 8          # RSS above held: at most peak held / 8


def _timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def python_pairs(n, size, ctx):
    alloc, free = mx_storage.alloc, mx_storage.free
    for _ in range(n):
        free(alloc(size, ctx))


def numpy_touch(n, size):
    for _ in range(n):
        a = np.empty(size, np.uint8)
        a[::4096] = 1
        del a


def round_backing_ratio(nops, seed=0):
    """Highest (live + cached) bytes over highest live bytes, Round pool."""
    mx_storage.set_pool_type("cpu", "Round")
    ctx = cpu(1)                       # a pool of its own, not shared with the rest
    rng = random.Random(seed)
    live, peak_live, peak_backing = [], 0, 0
    for _ in range(nops):
        if live and rng.random() < 0.5:
            mx_storage.free(live.pop(rng.randrange(len(live))))
        else:
            live.append(mx_storage.alloc(rng.randint(1, 1 << 20), ctx))
        peak_live = max(peak_live, sum(h.size for h in live))
        s = mx_storage.memory_stats(ctx)
        peak_backing = max(peak_backing, s["in_use"] + s["cached"])
    for h in live:
        mx_storage.free(h)
    mx_storage.release_all(ctx)
    mx_storage.set_pool_type("cpu", "Naive")
    return peak_backing / peak_live


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_workload(kind, nops, seed=7):
    """Run in a fresh process by rss_figures: the varying-size workload
    through the pool of type ``kind``, or through np.empty for "numpy".
    Returns the RSS above the bytes held at worst, the peak held and the RSS
    above the start once everything is freed (and the cache emptied)."""
    if kind != "numpy":
        mx_storage.set_pool_type("cpu", kind)

    def new(size):
        if kind == "numpy":
            return np.empty(size, np.uint8)
        return mx_storage.as_numpy(mx_storage.alloc(size, cpu()), (size,), np.uint8)

    def held(live):
        if kind == "numpy":
            return sum(a.nbytes for a in live)
        s = mx_storage.memory_stats(cpu())
        return s["in_use"] + s["cached"]

    def run(n, rng):
        live, worst, peak = [], 0, 0
        for _ in range(n):
            if live and (rng.random() < 0.5 or len(live) >= 8):
                live.pop(rng.randrange(len(live)))
            else:
                live.append(new(int(2 ** rng.uniform(12, 26))))
                live[-1][::4096] = 1
            peak = max(peak, held(live))
            worst = max(worst, _rss() - start - held(live))
        live.clear()
        mx_storage.empty_cache()
        return worst, peak, _rss() - start

    start = _rss()
    run(20, random.Random(-1))               # warm-up: first-use allocations
    start = _rss()
    return run(nops, random.Random(seed))


def rss_figures(nops):
    """rss_workload for each pool type and np.empty, each in a fresh process
    so that nothing else this script allocated is in its figures."""
    out = {}
    for kind in ("Naive", "Round", "Unpooled", "numpy"):
        code = (f"from benchmarks.compare_storage import rss_workload; import json; "
                f"print(json.dumps(rss_workload({kind!r}, {nops})))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).resolve().parent.parent)
        out[kind] = json.loads(proc.stdout)
    return out


def measure(repeat, sizes):
    ctx = cpu()
    n, nbig = sizes["pairs"], sizes["touch"]
    _storage._alloc_free_loop(1000, 4096, ctx)          # warm the bucket
    _storage._alloc_touch_free_loop(1, BIG, ctx)
    times = {k: [] for k in ("c_pairs", "py_pairs", "pool_touch", "numpy_touch")}
    for _ in range(repeat):
        times["c_pairs"].append(_timed(_storage._alloc_free_loop, n, 4096, ctx))
        times["py_pairs"].append(_timed(python_pairs, n, 4096, ctx))
        times["pool_touch"].append(_timed(_storage._alloc_touch_free_loop, nbig, BIG, ctx))
        times["numpy_touch"].append(_timed(numpy_touch, nbig, BIG))
    return times, round_backing_ratio(sizes["round_ops"]), rss_figures(sizes["rss_ops"])


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


def rss_rows(rss, nops):
    """Two rows per pool type: RSS above held at worst, and RSS left after
    empty_cache, beside np.empty's."""
    np_worst, _, np_left = rss["numpy"]
    rows = []
    for kind in ("Naive", "Round", "Unpooled"):
        worst, peak, left = rss[kind]
        limit = max(16 << 20, peak // RSS_EXCESS_SHARE)
        rows.append((f"{kind}, {nops} sizes 4 KiB..64 MiB: RSS above held", _mib(worst),
                     "np.empty " + _mib(np_worst), "-", f"<= {_mib(limit)}",
                     "PASS" if worst <= limit else "MISS"))
        rows.append((f"{kind}: RSS left after empty_cache()", _mib(left),
                     "np.empty " + _mib(np_left), "-", f"< {_mib(RSS_LEFT_TARGET)}",
                     "PASS" if left < RSS_LEFT_TARGET else "MISS"))
    return rows


def report(times, ratio, rss, sizes):
    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    n, nbig = sizes["pairs"], sizes["touch"]

    def us(key):
        return f"{best[key] / n * 1e6:.3g} us ({med[key] / n * 1e6:.3g} us)"

    def ms(key):
        return f"{best[key] / nbig * 1e3:.3g} ms ({med[key] / nbig * 1e3:.3g} ms)"

    def verdict(ok):
        return "PASS" if ok else "MISS"

    touch = best["numpy_touch"] / best["pool_touch"]
    rows = [("case", "ours", "reference", "ratio", "target", "result"),
            ("alloc+free 4 KiB, from C", us("c_pairs"), "-", "-",
             f"< {PAIR_TARGET_US:g} us", verdict(best["c_pairs"] / n * 1e6 < PAIR_TARGET_US)),
            ("alloc+free 4 KiB, from Python", us("py_pairs"), "-", "-", "-", "-"),
            ("alloc, touch, free 64 MiB", ms("pool_touch"), "np.empty " + ms("numpy_touch"),
             f"{touch:.1f}x", f">= {TOUCH_TARGET_RATIO:g}x",
             verdict(touch >= TOUCH_TARGET_RATIO)),
            (f"Round, {sizes['round_ops']} random sizes", f"{ratio:.2f}x peak live", "-", "-",
             f"<= {BACKING_TARGET:g}x", verdict(ratio <= BACKING_TARGET))]
    return format_table(rows + rss_rows(rss, sizes["rss_ops"]))


def main(argv=None):
    """Runs the comparisons and prints the table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 repeats")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args(argv)
    sizes = ({"pairs": 2000, "touch": 2, "round_ops": 300, "rss_ops": 60} if args.quick
             else {"pairs": 200_000, "touch": 20, "round_ops": 4000, "rss_ops": 300})
    repeat = args.repeat or (2 if args.quick else 7)
    times, ratio, rss = measure(repeat, sizes)
    print(f"mx-storage {mx_storage.__version__}, Naive CPU pool unless noted; "
          f"best of {repeat} runs (median in brackets)\n")
    print(report(times, ratio, rss, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
