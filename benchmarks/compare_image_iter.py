"""mx.image.ImageIter side by side: ours (mx_io) and MXNet 1.9.1, each in its
own interpreter, on the same .rec, in one run.

    python benchmarks/compare_image_iter.py [--quick] [--rounds R] [--repeat N]
        [--images N] [--mxnet-python PATH]

The case: N (default 2,000) JPEGs of 128x128 (quality 90, the .rec of
compare_image_record_iter.py), ImageIter to 3x112x112 float32, batch 64,
rand_crop + rand_mirror (CreateAugmenter's list), read sequentially.  Each
side times whole epochs (reset, then every batch waited for) and reports its
best of N epochs; the sides run in turn for R rounds.  Ours decodes on
MXNET_CPU_WORKER_NTHREADS threads (default: one per core, at most 4);
MXNet's ImageIter decodes in the calling thread whatever that variable says.
MXNet runs with OPENBLAS_CORETYPE=Haswell.
"""
import argparse
import os
import sys
import tempfile
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from benchmarks.common import WORKER_TIMER, format_table, run_json_script
from benchmarks.compare_image_record_iter import make_rec

# argv = rec path, repeat; ``image`` is the side's mx.image.
_ITER_WORKER = textwrap.dedent("""
    import json, random, sys, time
    rec, repeat = sys.argv[1], int(sys.argv[2])
    random.seed(0)
""") + WORKER_TIMER + textwrap.dedent("""
    it = image.ImageIter(64, (3, 112, 112), path_imgrec=rec, rand_crop=True, rand_mirror=True)
    count = [0]
    def epoch():
        it.reset()
        n = 0
        for batch in it:
            batch.data[0].wait_to_read()
            n += batch.data[0].shape[0] - batch.pad
        count[0] = n
    seconds = best(epoch)
    print(json.dumps({"img_s": count[0] / seconds}))
""")
_OURS = "from mx_io import image\n" + _ITER_WORKER
_MXNET = "import mxnet as mx\nimage = mx.image\n" + _ITER_WORKER


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="320 images, one round")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"),
        help="MXNet 1.9.1's interpreter ($MX_MXNET_PYTHON); '' skips it")
    args = ap.parse_args()
    count = 320 if args.quick else args.images
    rounds = 1 if args.quick else args.rounds
    mxnet_env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    rounds_out = []
    with tempfile.TemporaryDirectory() as folder:
        rec = make_rec(folder, count)
        sides = [("ours", sys.executable, _OURS, None),
                 ("mxnet", args.mxnet_python, _MXNET, mxnet_env)]
        for _ in range(rounds):
            got = {}
            for side, python, script, env in sides:
                result = run_json_script(python, script, [rec, args.repeat], env=env)
                if result is not None:
                    got[side] = result["img_s"]
            rounds_out.append(got)
    rows = [("side", "best images/s", "ours/side (best)", "ours/side (median of rounds)")]
    best = {side: max(r[side] for r in rounds_out if side in r)
            for side in ("ours", "mxnet") if any(side in r for r in rounds_out)}
    for side, label in [("ours", "ours, mx.image.ImageIter"),
                        ("mxnet", "MXNet 1.9.1, mx.image.ImageIter")]:
        if side in best and "ours" in best:
            per_round = [r["ours"] / r[side] for r in rounds_out if side in r and "ours" in r]
            rows.append((label, f"{best[side]:,.0f}", f"{best['ours'] / best[side]:.2f}",
                         f"{float(np.median(per_round)):.2f}"))
        else:
            rows.append((label, "-", "-", "-"))
    print(format_table(rows))
    print(f"({count} JPEGs 128x128 q90 -> 3x112x112 float32, batch 64, rand_crop + rand_mirror; "
          f"best of {args.repeat} epochs x {rounds} interleaved rounds; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
