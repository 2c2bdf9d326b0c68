"""Writes the im2rec reference files of these tests with MXNet 1.9.1.

Run from this folder with the reference interpreter (never by the tests):
    /tmp/mxnet-venv/bin/python make_mxnet_im2rec.py
It draws a small image tree under im2rec/images (PNG and JPEG of several
shapes in nested class folders, one broken .jpg, one file that is no image
by extension), then runs MXNet's own tools/im2rec.py on it; each run is a
line of RUNS, written with its outputs to im2rec/runs.json.  The .lst files
come from --list runs; multi.lst (three labels a line) is written here.
"""
import json
import os
import shutil
import subprocess
import sys

import cv2
import mxnet
import numpy as np

IM2REC = os.path.join(os.path.dirname(mxnet.__file__), "tools", "im2rec.py")
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "im2rec")

# (name, arguments after prefix and root, .lst to copy in as <name>.lst or None)
RUNS = [
    ("all", ["--list", "--recursive"], None),
    ("split", ["--list", "--recursive", "--train-ratio", "0.6", "--test-ratio", "0.2"], None),
    ("chunked", ["--list", "--recursive", "--no-shuffle", "--chunks", "2",
                 "--exts", ".png"], None),
    ("flat", ["--list"], None),
    ("jpg", ["--resize", "16", "--quality", "90", "--num-thread", "2"], "all.lst"),
    ("crop", ["--center-crop", "--resize", "12", "--encoding", ".png", "--quality", "3",
              "--num-thread", "2"], "all.lst"),
    ("gray", ["--color", "0", "--num-thread", "2"], "all.lst"),
    ("raw", ["--pass-through", "--num-thread", "2"], "all.lst"),
    ("multi", ["--pack-label", "--num-thread", "2"], None),
]


def draw_images(root):
    rng = np.random.default_rng(11)
    shapes = [(24, 18), (18, 30), (20, 20), (33, 17), (16, 25)]
    folders = ["cat", "dog", os.path.join("dog", "puppy"), "."]
    n = 0
    for folder in folders:
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        for k in range(3):
            h, w = shapes[n % len(shapes)]
            small = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
            img = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
            ext = [".png", ".jpg", ".JPEG"][k]
            cv2.imwrite(os.path.join(root, folder, f"img{n}{ext}"), img)
            n += 1
    with open(os.path.join(root, "dog", "broken.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 this is not a JPEG")
    with open(os.path.join(root, "cat", "notes.txt"), "w") as f:
        f.write("not an image\n")


def main():
    shutil.rmtree(HERE, ignore_errors=True)
    root = os.path.join(HERE, "images")
    draw_images(root)
    runs = []
    for name, args, lst in RUNS:
        if lst:
            shutil.copy(os.path.join(HERE, lst), os.path.join(HERE, name + ".lst"))
        if name == "multi":
            with open(os.path.join(HERE, "all.lst")) as f, \
                    open(os.path.join(HERE, "multi.lst"), "w") as out:
                for line in f:
                    idx, label, path = line.rstrip("\n").split("\t")
                    out.write(f"{idx}\t{label}\t{float(idx) / 4:f}\t{-1.5:f}\t{path}\n")
        cmd = [sys.executable, IM2REC, os.path.join(HERE, name), root] + args
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        runs.append({"name": name, "args": args, "stdout": proc.stdout})
    with open(os.path.join(HERE, "runs.json"), "w") as f:
        json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
