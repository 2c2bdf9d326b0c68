"""RecordIO and im2rec side by side: ours (mx_io) and MXNet 1.9.1, each in
its own interpreter, on the same files, in one run.

    python benchmarks/compare_recordio.py [--quick] [--mxnet-python PATH]

Cases:
- read: MXRecordIO.read of every record of a file, records/s, for 50,000
  records of 64 bytes (per-call cost) and 4,000 of 5 KB (a 128x128 JPEG);
- pack_img: 1,000 128x128 BGR images to quality-90 JPEG records, images/s;
- im2rec: 2,000 generated 128x128 JPEGs from a .lst to .rec/.idx with
  --resize 112 (--num-thread 1 and 2), wall seconds of the command as a user
  runs it: MXNet's tools/im2rec.py (multiprocessing when threads > 1) and
  ``python -m mx_io.im2rec`` (threads); both write the same bytes.
Best of R runs in each of 3 alternating rounds per side; ratios are ours over MXNet in throughput (above 1: ours is
faster).  MXNet runs with OPENBLAS_CORETYPE=Haswell.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script

# A worker: argv = folder, repeat.  ``rio`` is the side's recordio module.
_WORKER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    folder, repeat = sys.argv[1], int(sys.argv[2])
""") + WORKER_TIMER + textwrap.dedent("""
    def read_all(name):
        rec = rio.MXRecordIO(os.path.join(folder, name), "r")
        n = 0
        while rec.read() is not None:
            n += 1
        rec.close()
        return n

    imgs = np.load(os.path.join(folder, "images.npy"))
    def pack_all():
        for i, img in enumerate(imgs):
            rio.pack_img(rio.IRHeader(0, float(i), i, 0), img, quality=90)

    out = {}
    for name in ("small.rec", "jpeg.rec"):
        count = read_all(name)
        out[name] = count / best(lambda: read_all(name))
    out["pack_img"] = len(imgs) / best(pack_all)
    print(json.dumps(out))
""")
_OURS = "from mx_io import recordio as rio\n" + _WORKER
_MXNET = "import mxnet as mx\nrio = mx.recordio\n" + _WORKER


def make_data(folder, quick):
    """The shared inputs: two record files, images, a JPEG tree and its .lst."""
    import cv2
    import numpy as np
    from mx_io import recordio
    rng = np.random.default_rng(0)
    n_small, n_jpeg, n_img, n_tree = (5000, 400, 100, 200) if quick else (50000, 4000, 1000, 2000)
    rec = recordio.MXRecordIO(os.path.join(folder, "small.rec"), "w")
    for i in range(n_small):
        rec.write(rng.bytes(64))
    rec.close()
    rec = recordio.MXRecordIO(os.path.join(folder, "jpeg.rec"), "w")
    for i in range(n_jpeg):
        rec.write(rng.bytes(5000))
    rec.close()

    def image():
        small = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
        img = cv2.resize(small, (128, 128), interpolation=cv2.INTER_CUBIC)
        return cv2.add(img, rng.integers(0, 24, img.shape, dtype=np.uint8))
    np.save(os.path.join(folder, "images.npy"), np.stack([image() for _ in range(n_img)]))
    tree = os.path.join(folder, "tree")
    os.makedirs(tree)
    with open(os.path.join(folder, "base.lst"), "w") as lst:
        for i in range(n_tree):
            cv2.imwrite(os.path.join(tree, f"{i}.jpg"), image(), [cv2.IMWRITE_JPEG_QUALITY, 90])
            lst.write(f"{i}\t{i % 10:f}\t{i}.jpg\n")
    return tree


ROUNDS = 3


def best_of_rounds(sides, rounds):
    """Per side, the best (highest) of each figure over ``rounds`` turns;
    None for a side that did not run."""
    best = [None] * len(sides)
    for _ in range(rounds):
        for i, side in enumerate(sides):
            got = side()
            if got is not None:
                best[i] = got if best[i] is None else {k: max(v, best[i][k])
                                                       for k, v in got.items()}
    return best


def time_command(cmd, repeat, env=None):
    """Best wall seconds of ``cmd`` (a fresh process each time)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=900)
        best = min(best, time.perf_counter() - t)
    return best


def im2rec_times(folder, tree, mxnet_python, threads, repeat, mxnet_env):
    """{side: seconds} of im2rec on the tree's list, one prefix per side."""
    import shutil
    out = {}
    sides = [("ours", [sys.executable, "-m", "mx_io.im2rec"])]
    if mxnet_python and os.path.exists(mxnet_python):
        tool = subprocess.run([mxnet_python, "-c", "import mxnet, os; print(os.path.join("
                               "os.path.dirname(mxnet.__file__), 'tools', 'im2rec.py'))"],
                              capture_output=True, text=True, env=mxnet_env).stdout.strip()
        if os.path.exists(tool):
            sides.append(("mxnet", [mxnet_python, tool]))
    for side, cmd in sides:
        prefix = os.path.join(folder, f"{side}{threads}")
        shutil.copy(os.path.join(folder, "base.lst"), prefix + ".lst")
        out[side] = time_command(cmd + [prefix, tree, "--resize", "112", "--quality", "90",
                                        "--num-thread", str(threads)], repeat, mxnet_env)
    if len(out) == 2:
        for ext in (".rec", ".idx"):
            same = Path(folder, f"ours{threads}{ext}").read_bytes() == \
                Path(folder, f"mxnet{threads}{ext}").read_bytes()
            print(f"im2rec --num-thread {threads}: {ext} files identical: {same}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the data, one repeat")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"),
        help="MXNet 1.9.1's interpreter ($MX_MXNET_PYTHON); '' skips it")
    args = ap.parse_args()
    repeat = 1 if args.quick else args.repeat
    mxnet_env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    with tempfile.TemporaryDirectory() as folder:
        tree = make_data(folder, args.quick)
        # The sides take turns, ROUNDS times, and keep their best: a busy
        # shared machine then slows both alike.
        ours, theirs = best_of_rounds([
            lambda: run_json_script(sys.executable, _OURS, [folder, repeat]),
            lambda: run_json_script(args.mxnet_python, _MXNET, [folder, repeat],
                                    env=mxnet_env)], 1 if args.quick else ROUNDS)
        rows = [("case", "ours", "MXNet 1.9.1", "ours/MXNet")]

        def row(label, a, b, unit, invert=False):
            ratio = "-" if b is None else f"{(b / a if invert else a / b):.2f}"
            fmt = (lambda v: f"{v:.2f} s") if invert else (lambda v: f"{v:,.0f} {unit}")
            rows.append((label, fmt(a), "-" if b is None else fmt(b), ratio))
        for key, label in [("small.rec", "read, 64 B records"), ("jpeg.rec", "read, 5 KB records"),
                           ("pack_img", "pack_img 128x128 q90")]:
            row(label, ours[key], theirs and theirs[key], "rec/s" if "read" in label else "img/s")
        for threads in (1, 2):
            t = im2rec_times(folder, tree, args.mxnet_python, threads, repeat, mxnet_env)
            row(f"im2rec, {len(os.listdir(tree))} JPEGs, --num-thread {threads}", t["ours"],
                t.get("mxnet"), "", invert=True)
    print(format_table(rows))
    print("ours/MXNet: throughput ratio (im2rec: MXNet's seconds over ours); above 1 is faster")


if __name__ == "__main__":
    main()
