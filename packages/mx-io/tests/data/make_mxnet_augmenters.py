"""Writes augmenters_ref.npz and image_iter/, MXNet 1.9.1's mx.image
augmenter outputs and ImageIter batches for test_augmenters.py and
test_image_iter.py.

Run from this folder with the reference interpreter (never by the tests):
    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_mxnet_augmenters.py
Inputs: image_src.png (make_mxnet_image.py); the settings are
augmenter_cases.py's.  image_iter/ gets 10 generated
PNG images (imgs/), their .lst (two labels each), a .rec/.idx of them
(packed by MXNet's pack_img) and iter_ref.npz.  Every random call is
preceded by random.seed / np.random.seed, so the same seeds replay it.
"""
import json
import os
import random

import cv2
import mxnet as mx
import numpy as np

from augmenter_cases import AUGS, CREATE_KWARGS, FLOAT_INPUT, ITER_CASES, build

def augmenter_refs(src):
    out = {}
    for name, spec in AUGS.items():
        for seed in range(3):
            aug = build(mx.image, spec)
            img = src.astype("float32") if name in FLOAT_INPUT else src.copy()
            random.seed(seed)
            np.random.seed(seed)
            out[f"aug_{name}_{seed}"] = aug(img).asnumpy()
        dumped = aug.dumps()
        out[f"dumps_{name}"] = np.array(json.dumps(dumped) if isinstance(dumped, list)
                                        else dumped)
    for name, kwargs in CREATE_KWARGS.items():
        augs = mx.image.CreateAugmenter(**kwargs)
        out[f"create_dumps_{name}"] = np.array(json.dumps(
            [a.dumps() if not isinstance(a.dumps(), list) else a.dumps() for a in augs]))
        for seed in range(3):
            random.seed(seed)
            np.random.seed(seed)
            img = src
            for aug in augs:
                img = aug(img)
            out[f"create_{name}_{seed}"] = img.asnumpy()
    return out


def write_iter_inputs(folder):
    rng = np.random.default_rng(11)
    os.makedirs(os.path.join(folder, "imgs"), exist_ok=True)
    lst = []
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(folder, "images.idx"),
                                        os.path.join(folder, "images.rec"), "w")
    for i in range(10):
        h, w = 14 + i % 3 * 3, 16 + i % 4 * 2
        small = rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)
        img = cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)     # BGR
        name = f"imgs/img{i}.png"
        cv2.imwrite(os.path.join(folder, name), img)
        labels = [float(i % 4), float(10 + i)]
        lst.append(f"{i}\t{labels[0]:f}\t{labels[1]:f}\t{name}\n")
        header = mx.recordio.IRHeader(0, labels[0], i, 0)
        rec.write_idx(i, mx.recordio.pack_img(header, img, img_fmt=".png"))
    rec.close()
    with open(os.path.join(folder, "images.lst"), "w") as f:
        f.writelines(lst)


def iter_refs():
    out = {}
    for name, kwargs in ITER_CASES.items():
        random.seed(7)
        np.random.seed(7)
        it = mx.image.ImageIter(**kwargs)
        out[f"{name}_provide"] = np.array(json.dumps([it.provide_data, it.provide_label]))
        for epoch in range(3):
            for b, batch in enumerate(it):
                out[f"{name}_{epoch}_{b}_data"] = batch.data[0].asnumpy()
                out[f"{name}_{epoch}_{b}_label"] = batch.label[0].asnumpy()
                out[f"{name}_{epoch}_{b}_pad"] = np.array(batch.pad)
                out[f"{name}_{epoch}_{b}_dtype"] = np.array(str(batch.label[0].dtype))
            it.reset()
    return out


def main():
    src = mx.image.imdecode(open("image_src.png", "rb").read())
    np.savez_compressed("augmenters_ref.npz", **augmenter_refs(src))
    folder = "image_iter"
    write_iter_inputs(folder)
    os.chdir(folder)
    np.savez_compressed("iter_ref.npz", **iter_refs())


if __name__ == "__main__":
    main()
