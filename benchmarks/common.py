"""Shared fixtures for the benchmarks and the comparison scripts.

Append-only: asv keys its stored results by benchmark name, so changing what
an existing helper does would silently change the meaning of old results.
Add a new helper instead.
"""
import json
import os
import subprocess
import textwrap

import numpy as np

from mx_engine import _testing, engine

SEED = 1234

# 4 MB of float64 per op: large enough that a NumPy call (which releases the
# GIL) dwarfs the engine's per-function cost, small enough that two chains
# stay in this machine's L3 so both cores compute instead of sharing DRAM.
CHAIN_ARRAY_BYTES = 4 * 2**20


def warm_up(ctx):
    """Starts the engine's workers for ``ctx`` and waits for them, so that
    thread start-up stays outside every timing."""
    _testing.push_noop(ctx, writes=[engine.new_variable()])
    engine.wait_for_all()


def new_variables(n):
    """``n`` fresh engine variables."""
    return [engine.new_variable() for _ in range(n)]


def engine_noop(run_ctx):
    """A Python engine function that does nothing."""


def plain_noop():
    """A plain Python function that does nothing."""


def push_python_noops(n, ctx):
    """Pushes ``n`` independent Python no-ops through the engine and waits
    for all of them."""
    push = engine.push_sync
    for _ in range(n):
        push(engine_noop, ctx)
    engine.wait_for_all()


def submit_python_noops(pool, n):
    """Submits ``n`` Python no-ops to an ``concurrent.futures`` executor and
    waits for every result."""
    futures = [pool.submit(plain_noop) for _ in range(n)]
    for f in futures:
        f.result()


def chain_arrays(nchains, nbytes=CHAIN_ARRAY_BYTES, seed=SEED):
    """One seeded float64 array of ``nbytes`` per chain."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(nbytes // 8) for _ in range(nchains)]


def chain_op(x):
    """One step of a chain: tanh in place.

    A compute-bound SIMD ufunc that releases the GIL and, unlike BLAS, never
    starts threads of its own, so any parallelism comes from the caller.
    Repeated tanh keeps the values finite and far from subnormals.
    """
    np.tanh(x, out=x)


def run_chains_serial(arrays, nops):
    """Runs ``nops`` chain steps on every array in the calling thread, in
    the same order as ``push_chains`` pushes them."""
    for _ in range(nops):
        for x in arrays:
            chain_op(x)


def push_chains(arrays, variables, nops, ctx):
    """Pushes ``nops`` chain steps per array through the engine (each step
    mutates its array's variable, so every chain runs in order and the
    chains run in parallel), then waits on every chain."""
    steps = [((lambda run_ctx, x=x: chain_op(x)), (var,), f"tanh_chain{i}")
             for i, (x, var) in enumerate(zip(arrays, variables))]
    for _ in range(nops):
        for fn, mutate, name in steps:
            engine.push_sync(fn, ctx, mutate_vars=mutate, name=name)
    for var in variables:
        engine.wait_for_var(var)


def format_table(rows):
    """Rows of strings as aligned columns, a rule under the header row."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def ratio_table(cases, ours, torch, numpy, digits=2):
    """The side-by-side table of compare_sort.py and compare_index.py:
    seconds per case (``cases``: (key, label) pairs) of ours, PyTorch and
    NumPy ({key: seconds}, or None for a side that did not run), and ours
    over each of theirs (below 1: ours is faster)."""
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.{digits}f} ms"   # noqa: E731
    ratio = lambda r, k: "-" if r is None else f"{ours[k] / r[k]:.2f}"       # noqa: E731
    rows = [("case", "ours", "PyTorch", "NumPy", "ours/PyTorch", "ours/NumPy")]
    for key, label in cases:
        rows.append((label, fmt(ours, key), fmt(torch, key), fmt(numpy, key),
                     ratio(torch, key), ratio(numpy, key)))
    return format_table(rows)


# ---------------------------------------------------------------------------
# Side-by-side timing on a shared machine (compare_conv.py, compare_nn.py)
# ---------------------------------------------------------------------------
# Each side runs in bursts of BURST back-to-back calls after GAP_S idle
# seconds, and only calls 2.. of a burst are timed.  The gap lets the
# previous side's thread pools stop spinning (OpenBLAS's workers spin up to
# ~0.1 s after a call) so no side loses a core to another's spinners; the
# untimed first call wakes the side's own threads, as back-to-back
# operators in a training loop find them awake.
GAP_S = 0.12
BURST = 3


def burst(fn, count):
    """Seconds of each of ``count`` back-to-back calls of ``fn``."""
    import time
    out = []
    for _ in range(count):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def interleaved(sides, repeat, gap=GAP_S, count=BURST):
    """Per side, the median seconds of its warm calls in each repeat (a
    list of ``repeat`` values), the sides' bursts interleaved so that a
    busy shared machine slows all of them alike.  A side is a function of
    ``count`` returning that many call times in seconds."""
    import time
    per = [[] for _ in sides]
    for _ in range(repeat):
        for run, out in zip(sides, per):
            time.sleep(gap)
            out.append(float(np.median(run(count)[1:])))
    return per


def summary(per):
    """(median ms of each side, median over repeats of each side's time
    over side 0's in the same repeat): ratios of runs taken together are
    steadier than ratios of medians when the load drifts."""
    ms = [1e3 * float(np.median(ts)) for ts in per]
    ratios = [float(np.median(np.array(ts) / np.array(per[0]))) for ts in per]
    return ms, ratios


# The best-of-R timer of the side-by-side scripts' workers (which set
# `repeat` and import time first): appended to each worker's prelude.
WORKER_TIMER = textwrap.dedent("""
    def best(fn):
        fn()
        out = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            out = min(out, time.perf_counter() - t)
        return out
""")


def run_json_script(python, script, args, env=None, timeout=900):
    """Runs ``script`` (``python -c``) with ``args`` under interpreter
    ``python`` and returns the JSON its last stdout line holds; None (with
    a line saying why) when that interpreter is missing or the script
    fails, so a side-by-side benchmark skips a reference not installed."""
    if not python or not os.path.exists(python):
        return None
    proc = subprocess.run([python, "-c", script, *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        print(f"({python} failed: {proc.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def side_by_side_main(doc, cases, width, argv=None):
    """The main of a script timing ours against NumPy and PyTorch
    (compare_loss.py, compare_norm.py): ``cases(torch)`` gives (name,
    {'ours'|'numpy'|'torch': function of a burst count}) rows, with torch a
    benchmarks.torch_worker.TorchWorker (None with --quick or without
    PyTorch) on as many threads as ours; prints one line per row, names
    ``width`` wide."""
    import argparse
    from mx_ops.ops.nn.convolution import max_threads
    from benchmarks.torch_worker import TorchWorker
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 repeats, no PyTorch")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--burst", type=int, default=BURST,
                        help=f"calls per burst, the first untimed (default {BURST})")
    parser.add_argument("--gap", type=float, default=GAP_S,
                        help=f"seconds idle before each burst (default {GAP_S}); with 0 and "
                        "a long burst every side runs warm, back to back")
    args = parser.parse_args(argv)
    if args.burst < 2 or args.gap < 0:
        parser.error(f"--burst must be 2 or more (the first call is untimed), got {args.burst}; "
                     f"--gap must be 0 or more, got {args.gap}")
    repeat = 2 if args.quick else args.repeat
    threads = max_threads()
    torch = None if args.quick else TorchWorker.start(threads)
    print(f"{'operation':{width}s} {'ours ms':>8s} {'numpy ms':>9s} {'np/ours':>8s}"
          f" {'torch ms':>9s} {'torch/ours':>10s}")
    for name, sides in cases(torch):
        keys = list(sides)
        ms, ratio = summary(interleaved([sides[k] for k in keys], repeat, args.gap,
                                        args.burst))
        got = {k: (t, r) for k, t, r in zip(keys, ms, ratio)}
        torch_col = (f"{got['torch'][0]:9.3f} {got['torch'][1]:10.2f}" if "torch" in got
                     else f"{'-':>9s} {'-':>10s}")
        print(f"{name:{width}s} {got['ours'][0]:8.3f} {got['numpy'][0]:9.3f}"
              f" {got['numpy'][1]:8.2f} {torch_col}", flush=True)
    print(f"(float32; {os.cpu_count()} cpu cores; ours and PyTorch "
          f"{'(' + torch.version + ') ' if torch else ''}on {threads} threads; medians of "
          f"{repeat} interleaved bursts x {args.burst - 1} warm calls, {args.gap} s idle "
          f"before each)")
    if torch is not None:
        torch.close()
