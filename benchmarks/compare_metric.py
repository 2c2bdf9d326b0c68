"""Metric updates side by side: ours (``import mx``) and MXNet 1.9.1.

    python benchmarks/compare_metric.py [--quick] [--repeat R] [--rounds K] [--mxnet-python PATH]

For Accuracy and TopKAccuracy(top_k=5): ``reset()``, ``update`` on 100
batches of (128, 10) float32 scores and (128,) labels already on the
device, then ``get()`` -- what a training epoch's metric costs.  The same
script runs in each interpreter (MXNet's is $MX_MXNET_PYTHON, default
/tmp/mxnet-venv/bin/python; skipped when missing), on the same seeded data;
the printed values must agree.  Figures: the best of R runs, in ms, the
median over K rounds that alternate ours and MXNet's (so a shared
machine's load hits both).  "update" is the time until the last update
returns (ours queues work and returns; MXNet has waited for every batch);
"update+get" includes the wait for the result.  Ratio: MXNet / ours (above
1: ours is faster).
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script
from benchmarks.mxnet_worker import MXNET_PYTHON, mxnet_env

BATCHES, ROWS, CLASSES = 100, 128, 10

# argv: framework ('mx' or 'mxnet'), repeat.
_SCRIPT = r"""
import json, sys, time
import numpy as np
framework, repeat = sys.argv[1], int(sys.argv[2])
mx = __import__(framework)
""" + WORKER_TIMER + r"""
rng = np.random.default_rng(7)
preds = [mx.nd.array(rng.random((%d, %d), dtype=np.float32)) for _ in range(%d)]
labels = [mx.nd.array(rng.integers(0, %d, %d).astype(np.float32)) for _ in range(%d)]
mx.nd.waitall()
out = {}
for key, make in (("acc", lambda: mx.metric.Accuracy()),
                  ("top5", lambda: mx.metric.TopKAccuracy(top_k=5))):
    metric = make()
    pushed = []
    def epoch():
        metric.reset()
        t = time.perf_counter()
        for label, pred in zip(labels, preds):
            metric.update([label], [pred])
        pushed.append(time.perf_counter() - t)
        return metric.get()[1]
    total = best(epoch)
    out[key] = {"total": total, "update": min(pushed[1:]), "value": float(epoch())}
print(json.dumps(out))
""" % (ROWS, CLASSES, BATCHES, CLASSES, ROWS, BATCHES)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 2 runs")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON,
                        help="MXNet 1.9.1's interpreter ($MX_MXNET_PYTHON); '' skips it")
    args = parser.parse_args(argv)
    repeat, rounds = (2, 1) if args.quick else (args.repeat, args.rounds)
    root = str(Path(__file__).resolve().parent.parent)
    ours_env = dict(os.environ, PYTHONPATH=root)
    runs = {"ours": [], "mxnet": []}
    for _ in range(rounds):
        runs["ours"].append(run_json_script(sys.executable, _SCRIPT, ["mx", repeat],
                                            env=ours_env))
        runs["mxnet"].append(run_json_script(args.mxnet_python, _SCRIPT, ["mxnet", repeat],
                                             env=mxnet_env(2)))
    if any(r is None for r in runs["ours"]):
        raise SystemExit("compare_metric: our run failed")
    have_mxnet = all(r is not None for r in runs["mxnet"])
    rows = [("metric (100 x (128, 10))", "ours update", "ours update+get", "MXNet update+get",
             "MXNet/ours", "values (ours, MXNet)")]
    for key, label in (("acc", "Accuracy"), ("top5", "TopKAccuracy(5)")):
        med = lambda side, what: statistics.median(r[key][what] for r in runs[side])  # noqa
        ours = med("ours", "total")
        theirs = med("mxnet", "total") if have_mxnet else None
        values = (runs["ours"][0][key]["value"],
                  runs["mxnet"][0][key]["value"] if have_mxnet else None)
        if have_mxnet and abs(values[0] - values[1]) > 1e-9:
            raise SystemExit(f"compare_metric: {label} values differ: {values}")
        rows.append((label, f"{med('ours', 'update') * 1e3:.2f} ms", f"{ours * 1e3:.2f} ms",
                     "-" if theirs is None else f"{theirs * 1e3:.2f} ms",
                     "-" if theirs is None else f"{theirs / ours:.2f}",
                     f"{values[0]:.6f}, " + ("-" if values[1] is None else f"{values[1]:.6f}")))
    print(format_table(rows))


if __name__ == "__main__":
    main()
