"""Our engine side by side with its references, in one process.

    python benchmarks/compare_engine.py [--quick] [--repeat R]

Three comparisons, each run R times with ours and the reference interleaved
(so that both see the same machine load); the table shows the best run and,
in brackets, the median:

1. native no-op functions pushed from C, chained on one variable and
   independent: per-function time against the < 1 us target;
2. Python no-op callables: the engine against
   ``ThreadPoolExecutor(max_workers=2).submit``, target at least 4x faster;
3. two independent chains of GIL-releasing NumPy work: the engine against
   the same ops run serially in this thread, target speed-up >= 1.8 with
   2 workers.  Two plain ``threading.Thread``s running the chains show what
   the machine itself allows.

Verdicts use the best run.  The script only reports: it exits 0 whether or
not the targets are met.
"""
import argparse
import os
import platform
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # Run as a script: make the `benchmarks` package importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx_engine
from mx_engine import _testing, engine

from benchmarks.common import (CHAIN_ARRAY_BYTES, chain_arrays, format_table,
                               new_variables, push_chains, push_python_noops,
                               run_chains_serial,
                               submit_python_noops, warm_up)

FULL = {"native_n": 100_000, "python_n": 20_000, "chain_ops": 20, "repeat": 11}
QUICK = {"native_n": 10_000, "python_n": 2_000, "chain_ops": 4, "repeat": 2}

NATIVE_TARGET_US = 1.0
PYTHON_TARGET_RATIO = 4.0
CHAINS_TARGET_SPEEDUP = 1.8


def _timed(fn, *args):
    """Wall time of ``fn(*args)`` in seconds."""
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _run_threads(arrays, nops):
    """The chains on one plain thread each (no engine)."""
    threads = [threading.Thread(target=run_chains_serial, args=([x], nops))
               for x in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _push_native_chain(var, ctx, n):
    """``n`` native no-ops chained on ``var``, then a wait."""
    _testing.push_noop_chain(var, ctx, n)
    engine.wait_for_all()


def _push_native_independent(variables, ctx):
    """One native no-op per variable, then a wait."""
    _testing.push_noop_independent(variables, ctx)
    engine.wait_for_all()


def measure(sizes, repeat):
    """Runs every comparison ``repeat`` times.

    Parameters
    ----------
    sizes : dict
        ``native_n`` native no-ops, ``python_n`` Python no-ops and
        ``chain_ops`` NumPy ops per chain.
    repeat : int
        Runs per measurement.

    Returns
    -------
    dict
        Measurement name -> list of ``repeat`` wall times in seconds.
    """
    ctx = mx_engine.cpu()
    warm_up(ctx)
    chain_var = engine.new_variable()
    independent_vars = new_variables(sizes["native_n"])
    arrays = chain_arrays(2)
    chain_vars = new_variables(2)
    times = {k: [] for k in ("native_chain", "native_independent", "python_engine",
                             "python_pool", "chains_engine", "chains_serial",
                             "chains_threads")}
    with ThreadPoolExecutor(max_workers=2) as pool:
        submit_python_noops(pool, 2)   # start the pool's threads outside the timing
        for _ in range(repeat):
            times["native_chain"].append(
                _timed(_push_native_chain, chain_var, ctx, sizes["native_n"]))
            times["native_independent"].append(
                _timed(_push_native_independent, independent_vars, ctx))
            times["python_engine"].append(_timed(push_python_noops, sizes["python_n"], ctx))
            times["python_pool"].append(_timed(submit_python_noops, pool, sizes["python_n"]))
            nops = sizes["chain_ops"]
            times["chains_engine"].append(_timed(push_chains, arrays, chain_vars, nops, ctx))
            times["chains_serial"].append(_timed(run_chains_serial, arrays, nops))
            times["chains_threads"].append(_timed(_run_threads, arrays, nops))
    return times


def _us(seconds, n):
    """Per-function microseconds of ``n`` functions that took ``seconds``."""
    return f"{seconds / n * 1e6:.3g} us"


def _ms(seconds):
    """Milliseconds, three significant digits."""
    return f"{seconds * 1e3:.3g} ms"


def report(times, sizes):
    """The comparison table, with PASS/MISS against the targets.

    Parameters
    ----------
    times : dict
        What ``measure`` returned.
    sizes : dict
        The sizes ``measure`` ran with.

    Returns
    -------
    str
        The table, one line per comparison.
    """
    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}

    def cell(key, fmt, *args):
        """'best (median)' of measurement ``key``."""
        return f"{fmt(best[key], *args)} ({fmt(med[key], *args)})"

    def verdict(ok):
        """PASS or MISS."""
        return "PASS" if ok else "MISS"

    nn, pn, ops = sizes["native_n"], sizes["python_n"], sizes["chain_ops"]
    rows = [("case", "ours", "reference", "ratio", "target", "result")]
    for key, label in (("native_chain", f"native no-op, chain of {nn}"),
                       ("native_independent", f"native no-op, {nn} independent")):
        per_fn_us = best[key] / nn * 1e6
        rows.append((label, cell(key, _us, nn), "-", "-", f"< {NATIVE_TARGET_US:g} us",
                     verdict(per_fn_us < NATIVE_TARGET_US)))
    ratio = best["python_pool"] / best["python_engine"]
    rows.append((f"Python no-op callables x{pn}", cell("python_engine", _us, pn),
                 "ThreadPoolExecutor " + cell("python_pool", _us, pn), f"{ratio:.1f}x",
                 f">= {PYTHON_TARGET_RATIO:g}x", verdict(ratio >= PYTHON_TARGET_RATIO)))
    speedup = best["chains_serial"] / best["chains_engine"]
    rows.append((f"NumPy 2 chains x {ops} ops", cell("chains_engine", _ms),
                 "serial " + cell("chains_serial", _ms), f"{speedup:.2f}x",
                 f">= {CHAINS_TARGET_SPEEDUP:g}x", verdict(speedup >= CHAINS_TARGET_SPEEDUP)))
    ceiling = best["chains_serial"] / best["chains_threads"]
    rows.append(("  (2 plain threads, for scale)", cell("chains_threads", _ms),
                 "serial " + cell("chains_serial", _ms), f"{ceiling:.2f}x", "-", "-"))
    return format_table(rows)


def main(argv=None):
    """Runs the comparisons and prints the table.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status, 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and 2 runs: a smoke run, not a measurement")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per measurement (default 11, 2 with --quick)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    repeat = args.repeat or sizes["repeat"]
    times = measure(sizes, repeat)
    workers = os.environ.get("MXNET_CPU_WORKER_NTHREADS") or f"{os.cpu_count()} (default)"
    print(f"mx-engine {mx_engine.__version__} ({engine.engine_type()}, "
          f"cpu workers {workers}) vs references, on {platform.machine()} with "
          f"{os.cpu_count()} CPUs; Python {platform.python_version()}, numpy {np.__version__}")
    print(f"best of {repeat} runs (median in brackets); per-function times for no-ops, "
          f"wall times for the NumPy chains (np.tanh in place, "
          f"{CHAIN_ARRAY_BYTES >> 20} MB of float64 per op)"
          + ("; --quick: sizes too small to judge" if args.quick else ""))
    print()
    print(report(times, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
