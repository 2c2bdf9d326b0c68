"""ImageRecordIter side by side: ours (mx_io) and MXNet 1.9.1, each in its own
interpreter, on the same .rec, in one run, plus a single-thread
``cv2.imdecode`` + crop loop as the floor of what decoding costs.

    python benchmarks/compare_image_record_iter.py [--quick] [--rounds R]
        [--repeat N] [--threads T] [--mxnet-python PATH]

The case: 2,000 JPEGs of 128x128 (quality 90), ImageRecordIter to
3x112x112 float32, batch 64, rand_crop + rand_mirror, ``preprocess_threads``
T (default 2).  Each side times whole epochs (reset, then every batch
waited for); a worker reports its best of N epochs and the sides run in
turn for R rounds (interleaved, so a loaded machine slows them alike); the
table shows each side's best images/s, ours over each from the bests and
the median of the rounds' ratios (above 1: ours is faster).  MXNet runs with OPENBLAS_CORETYPE=Haswell.
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

# argv = rec path, repeat, threads; ``io`` is the side's mx.io.
_ITER_WORKER = textwrap.dedent("""
    import json, sys, time
    rec, repeat, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
""") + WORKER_TIMER + textwrap.dedent("""
    it = io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 112, 112), batch_size=64,
                            rand_crop=True, rand_mirror=True, preprocess_threads=threads)
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
_OURS = "import mx_io.io as io\n" + _ITER_WORKER
_MXNET = "import mxnet as mx\nio = mx.io\n" + _ITER_WORKER

# The floor: one thread reading, decoding and cropping every record.
_CV2_LOOP = textwrap.dedent("""
    import json, sys, time
    import cv2
    import numpy as np
    from mx_io import recordio
    rec, repeat = sys.argv[1], int(sys.argv[2])
""") + WORKER_TIMER + textwrap.dedent("""
    rng = np.random.default_rng(0)
    def epoch():
        reader = recordio.MXRecordIO(rec, "r")
        while (record := reader.read()) is not None:
            header, payload = recordio.unpack(record)
            img = cv2.imdecode(np.frombuffer(payload, np.uint8), cv2.IMREAD_COLOR)
            y, x = rng.integers(0, 17, 2)
            crop = img[y:y + 112, x:x + 112]
            if rng.random() < 0.5:
                crop = crop[:, ::-1]
        reader.close()
    seconds = best(epoch)
    print(json.dumps({"img_s": N / seconds}))
""")


def make_rec(folder, count):
    """``count`` 128x128 quality-90 JPEG records (smooth noise, photo-like sizes)."""
    import cv2
    import numpy as np
    from mx_io import recordio
    rng = np.random.default_rng(0)
    path = os.path.join(folder, "bench.rec")
    writer = recordio.MXRecordIO(path, "w")
    for i in range(count):
        small = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
        img = cv2.resize(small, (128, 128), interpolation=cv2.INTER_CUBIC)
        img = cv2.add(img, rng.integers(0, 24, img.shape, dtype=np.uint8))
        writer.write(recordio.pack_img(recordio.IRHeader(0, float(i % 10), i, 0), img,
                                       quality=90))
    writer.close()
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="400 images, one round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"),
        help="MXNet 1.9.1's interpreter ($MX_MXNET_PYTHON); '' skips it")
    args = ap.parse_args()
    count = 400 if args.quick else 2000
    rounds = 1 if args.quick else args.rounds
    mxnet_env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    rounds_out = []         # {side: images/s} of each round
    with tempfile.TemporaryDirectory() as folder:
        rec = make_rec(folder, count)
        sides = [("ours", sys.executable, _OURS, [rec, args.repeat, args.threads], None),
                 ("mxnet", args.mxnet_python, _MXNET, [rec, args.repeat, args.threads],
                  mxnet_env),
                 ("cv2", sys.executable, f"N = {count}\n" + _CV2_LOOP, [rec, args.repeat],
                  None)]
        for _ in range(rounds):
            got = {}
            for side, python, script, argv, env in sides:
                result = run_json_script(python, script, argv, env=env)
                if result is not None:
                    got[side] = result["img_s"]
            rounds_out.append(got)
    best = {side: max(r[side] for r in rounds_out if side in r)
            for side in ("ours", "mxnet", "cv2") if any(side in r for r in rounds_out)}
    rows = [("side", "best images/s", "ours/side (best)", "ours/side (median of rounds)")]
    for side, label in [("ours", f"ours, ImageRecordIter, {args.threads} threads"),
                        ("mxnet", f"MXNet 1.9.1, ImageRecordIter, {args.threads} threads"),
                        ("cv2", "cv2.imdecode + crop loop, 1 thread")]:
        if side in best:
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
