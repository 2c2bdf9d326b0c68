"""What the profiler costs per imperative call: small cases of
benchmarks/call_cases.py timed with the profiler stopped and running
(operators and memory recorded, as ``set_config(profile_all=True)``),
interleaved in one process.

    python benchmarks/compare_profiler_overhead.py [--quick] [--repeat R] [--n N]
        [--cases add,relu,...]

Each figure is the median over repeats of the per-call cost of N
back-to-back calls and one wait, in microseconds; 'overhead' is the median
of the per-repeat differences.  The recorded events are dropped between
bursts so that the trace does not grow without bound.
"""
import argparse
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx
from mx import profiler

from benchmarks import call_cases
from benchmarks.common import format_table, interleaved

DEFAULT_CASES = "add,relu,fully_connected,zeros"


def _side(loop, n, on):
    def run(count):
        profiler.set_state("run" if on else "stop")
        try:
            return [t * n for t in call_cases.time_loop(loop, n, count)]
        finally:
            profiler.set_state("stop")
            if on:
                profiler.dump(finished=True)    # drop what was recorded
                profiler.dumps(reset=True)
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 repeats of 50 calls")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--n", type=int, default=1000, help="calls per timed run")
    parser.add_argument("--cases", default=DEFAULT_CASES)
    args = parser.parse_args(argv)
    repeat, n = (2, 50) if args.quick else (args.repeat, args.n)
    with tempfile.TemporaryDirectory() as tmp:
        profiler.set_config(profile_all=True, filename=str(Path(tmp) / "trace.json"))
        rows = [["case", "profiler off (us)", "profiler on (us)", "overhead (us/call)"]]
        for key in args.cases.split(","):
            loop = call_cases.make_loop("mx", key, n, {"mx": mx, "np": np})
            off, on = interleaved([_side(loop, n, False), _side(loop, n, True)], repeat)
            diff = np.median(np.array(on) - np.array(off)) / n
            rows.append([call_cases.LABELS[key], f"{1e6 * np.median(off) / n:.2f}",
                         f"{1e6 * np.median(on) / n:.2f}", f"{1e6 * diff:+.2f}"])
    print(format_table(rows))


if __name__ == "__main__":
    main()
