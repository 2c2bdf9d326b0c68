"""The cost of one small imperative call, side by side: every case of
benchmarks/call_cases.py (operators, in-place operators, ``out=``, creation
functions, layers, views) on tiny arrays, for ours (``import mx``), NumPy,
MXNet 1.9.1 and PyTorch.

    python benchmarks/compare_call_overhead.py [--quick] [--repeat R] [--n N]
        [--mxnet-python PATH] [--torch-python PATH]

Each figure is the per-call cost of N back-to-back calls followed by one
wait (``mx.nd.waitall()``; NumPy and PyTorch's CPU calls are synchronous):
what the Python thread pays per call.  Issue 13's targets (item 2): every
case within 2x ours for ``c = a + b``, and ``c = a + b`` within 5x NumPy's
``np.add(a, b)`` on (1,) arrays.

MXNet runs in its own interpreter ($MX_MXNET_PYTHON, default
/tmp/mxnet-venv/bin/python: it needs numpy<1.24) and PyTorch in its own
($MX_TORCH_PYTHON, default /tmp/torch-venv/bin/python), each as a worker
subprocess that times its loops itself; a missing one is skipped.  Each
repeat runs, case by case, a short burst of every side in turn
(interleaved), so a shared machine's load hits all alike.  Figures are the
median over repeats of each burst's median warm run, with the best
repeat's in brackets, in microseconds per call; ratios to ``c = a + b`` are the medians
of the ratios taken within each repeat.
"""
import argparse
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx

from benchmarks import call_cases
from benchmarks.common import format_table
from benchmarks.mxnet_worker import MXNET_PYTHON, mxnet_env
from benchmarks.net_worker import ROOT, NetWorker, start_server
from benchmarks.torch_worker import TORCH_PYTHON

CALL_TARGET = 2.0       # every case within 2x ours for c = a + b
NUMPY_TARGET = 5.0      # c = a + b within 5x np.add on (1,)
GAP_S = 0.01            # idle time before each burst (tiny arrays: no BLAS spinners)
BURST = 3               # runs per burst; the first is untimed (warm-up)

# Runs in the reference's interpreter: argv = root, framework ('mx' or
# 'torch'), n; one JSON request per line on stdin ({"key", "count"}), one
# JSON reply per line on stdout ({"s": per-call seconds} or {"error"}).
_SERVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from benchmarks import call_cases

framework, n = sys.argv[2], int(sys.argv[3])
if framework == "torch":
    import torch
    namespace, version = {"torch": torch}, torch.__version__
else:
    import mxnet as mx
    namespace, version = {"mx": mx}, mx.__version__
print(json.dumps({"version": version}), flush=True)
loops = {}
for line in sys.stdin:
    req = json.loads(line)
    try:
        key = req["key"]
        if key not in loops:
            loops[key] = call_cases.make_loop(framework, key, n, namespace)
        out = ({"s": call_cases.time_loop(loops[key], n, req["count"])}
               if loops[key] is not None else {"s": None})
    except Exception as e:          # reported in the table; the run goes on
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out), flush=True)
"""


class LocalSide:
    """Ours or NumPy, in this process."""

    def __init__(self, name, framework, namespace, n):
        self.name, self.framework, self.namespace, self.n = name, framework, namespace, n
        self._loops = {}

    def run(self, key, count):
        """Per-call seconds of ``count`` runs of case ``key``; None where
        the side has no such case; raises what the case raised."""
        if key not in self._loops:
            self._loops[key] = call_cases.make_loop(self.framework, key, self.n,
                                                    self.namespace)
        loop = self._loops[key]
        return None if loop is None else call_cases.time_loop(loop, self.n, count)

    def close(self):
        pass


class WorkerSide(NetWorker):
    """MXNet or PyTorch in its own interpreter (see _SERVER)."""

    @classmethod
    def start(cls, name, framework, python, n, env):
        """The worker, or None (with the reason printed) when ``python`` is
        missing or does not start."""
        started = start_server(name, python, _SERVER, [str(ROOT), framework, str(n)], env)
        if started is None:
            return None
        proc, info = started
        side = cls(proc, name, info["version"], threads=None)
        side.name = f"{name} {side.version}"
        return side

    def run(self, key, count):
        """As LocalSide.run, timed inside the worker."""
        return self._ask({"key": key, "count": count})["s"]


def measure(sides, keys, repeat):
    """{side name: {key: [median warm per-call seconds per repeat]}} and
    {side name: {key: error text}}, bursts interleaved case by case."""
    times = {s.name: {k: [] for k in keys} for s in sides}
    errors = {s.name: {} for s in sides}
    for _ in range(repeat):
        for key in keys:
            for side in sides:
                if key in errors[side.name]:
                    continue
                time.sleep(GAP_S)
                try:
                    runs = side.run(key, BURST)
                except Exception as e:      # one broken case must not hide the others
                    errors[side.name][key] = str(e).splitlines()[-1][:60]
                    continue
                if runs is None:
                    errors[side.name][key] = None
                else:
                    times[side.name][key].append(float(np.median(runs[1:])))
    return times, errors


def _cell(ts, error):
    if ts:
        return f"{np.median(ts) * 1e6:.2f} ({min(ts) * 1e6:.2f})"
    return "-" if error is None else f"error: {error}"


def _ratio(num, den):
    """Median of the per-repeat ratios, or None."""
    if not num or len(num) != len(den):
        return None
    return float(np.median(np.array(num) / np.array(den)))


def table(sides, times, errors, keys):
    ours = sides[0].name
    head = ["case"] + [f"{s.name} us" for s in sides] + ["ours / (a+b)", "target", "result"]
    rows = [tuple(head)]
    yard = times[ours][call_cases.YARDSTICK]
    for key in keys:
        cells = [call_cases.LABELS[key]]
        cells += [_cell(times[s.name][key], errors[s.name].get(key)) for s in sides]
        ratio = _ratio(times[ours][key], yard)
        cells.append("-" if ratio is None else f"{ratio:.2f}x")
        if key == call_cases.YARDSTICK:
            vs_np = _ratio(times[ours][key], times.get("NumPy", {}).get(key))
            cells.append(f"<= {NUMPY_TARGET:g}x np.add")
            cells.append("-" if vs_np is None else
                         f"{vs_np:.1f}x " + ("PASS" if vs_np <= NUMPY_TARGET else "MISS"))
        else:
            cells.append(f"<= {CALL_TARGET:g}x (a+b)")
            cells.append("-" if ratio is None else
                         ("PASS" if ratio <= CALL_TARGET else "MISS"))
        rows.append(tuple(cells))
    return format_table(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 repeats of 50 calls")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--n", type=int, default=1000, help="calls per timed run")
    parser.add_argument("--cases", default=",".join(call_cases.KEYS))
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    parser.add_argument("--torch-python", default=TORCH_PYTHON)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.n = 2, 50
    keys = args.cases.split(",")
    unknown = sorted(set(keys) - set(call_cases.KEYS))
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {call_cases.KEYS}")
    if call_cases.YARDSTICK not in keys:
        keys.insert(0, call_cases.YARDSTICK)
    sides = [LocalSide("ours", "mx", {"mx": mx}, args.n),
             LocalSide("NumPy", "np", {"np": np}, args.n)]
    # MXNet as its users run it (benchmarks/mxnet_worker.py): the default
    # engine, OpenMP on every core (a tiny array never splits anyway).
    for side in (WorkerSide.start("MXNet", "mx", args.mxnet_python, args.n,
                                  mxnet_env(os.cpu_count() or 1)),
                 WorkerSide.start("PyTorch", "torch", args.torch_python, args.n,
                                  dict(os.environ))):
        if side is not None:
            sides.append(side)
    try:
        times, errors = measure(sides, keys, args.repeat)
    finally:
        for side in sides:
            side.close()
    print(f"per-call us: median of {args.repeat} repeats (best), "
          f"{args.n} calls then one wait per run\n")
    print(table(sides, times, errors, keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
