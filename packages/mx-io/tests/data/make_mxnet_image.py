"""Writes image_ref.npz, MXNet 1.9.1's mx.image outputs for these tests.

Run from this folder with the reference interpreter (never by the tests):
    /tmp/mxnet-venv/bin/python make_mxnet_image.py
Inputs: image_src.jpg / image_src.png (drawn here with OpenCV, committed).
Every array is named after the call that made it.
"""
import random

import cv2
import mxnet as mx
import numpy as np


def main():
    rng = np.random.default_rng(5)
    small = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    img = cv2.resize(small, (37, 29), interpolation=cv2.INTER_CUBIC)   # BGR, 29x37
    cv2.imwrite("image_src.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    cv2.imwrite("image_src.png", img)
    out = {}
    for name in ("image_src.jpg", "image_src.png"):
        with open(name, "rb") as f:
            buf = f.read()
        for flag in (0, 1):
            for to_rgb in (0, 1):
                key = f"imdecode_{name[-3:]}_{flag}_{to_rgb}"
                out[key] = mx.image.imdecode(buf, flag=flag, to_rgb=to_rgb).asnumpy()
                out["imread" + key[8:]] = mx.image.imread(name, flag=flag,
                                                          to_rgb=to_rgb).asnumpy()
    src = mx.image.imdecode(open("image_src.png", "rb").read())
    for interp in range(5):
        out[f"imresize_up_{interp}"] = mx.image.imresize(src, 50, 41, interp=interp).asnumpy()
        out[f"imresize_down_{interp}"] = mx.image.imresize(src, 13, 11, interp=interp).asnumpy()
    out["imresize_float"] = mx.image.imresize(src.astype("float32"), 20, 15).asnumpy()
    for size in (10, 40):
        for interp in (1, 2, 9):
            out[f"resize_short_{size}_{interp}"] = mx.image.resize_short(src, size,
                                                                         interp).asnumpy()
    out["fixed_crop"] = mx.image.fixed_crop(src, 3, 4, 20, 10).asnumpy()
    out["fixed_crop_size"] = mx.image.fixed_crop(src, 3, 4, 20, 10, size=(15, 12)).asnumpy()
    for size in ((16, 16), (40, 10), (37, 29)):
        crop, rect = mx.image.center_crop(src, size)
        out[f"center_crop_{size[0]}_{size[1]}"] = crop.asnumpy()
        out[f"center_crop_rect_{size[0]}_{size[1]}"] = np.array(rect)
        random.seed(42)
        crop, rect = mx.image.random_crop(src, size)
        out[f"random_crop_{size[0]}_{size[1]}"] = crop.asnumpy()
        out[f"random_crop_rect_{size[0]}_{size[1]}"] = np.array(rect)
    mean = mx.nd.array([123.68, 116.28, 103.53])
    std = mx.nd.array([58.395, 57.12, 57.375])
    out["color_normalize"] = mx.image.color_normalize(src.astype("float32"), mean,
                                                      std).asnumpy()
    out["color_normalize_nostd"] = mx.image.color_normalize(src.astype("float32"),
                                                            mean).asnumpy()
    scale = [((640, 480), (720, 120)), ((360, 1000), (480, 500)), ((300, 400), (0, 0)),
             ((100, 100), (50, 60))]
    out["scale_down"] = np.array([mx.image.scale_down(s, t) for s, t in scale])
    np.savez_compressed("image_ref.npz", **out)


if __name__ == "__main__":
    main()
