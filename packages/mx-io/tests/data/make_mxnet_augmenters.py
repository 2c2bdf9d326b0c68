"""Writes augmenters_ref.npz and image_iter/, MXNet 1.9.1's mx.image
augmenter outputs and ImageIter batches for test_augmenters.py and
test_image_iter.py.

Run from this folder with the reference interpreter (never by the tests):
    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_mxnet_augmenters.py
Inputs: image_src.png (make_mxnet_image.py).  image_iter/ gets 10 generated
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

AUGS = {
    "resize_short": lambda: mx.image.ResizeAug(20, 1),
    "resize_interp9": lambda: mx.image.ResizeAug(40, 9),
    "force_resize": lambda: mx.image.ForceResizeAug((15, 11), 1),
    "random_crop": lambda: mx.image.RandomCropAug((16, 12), 1),
    "random_sized_crop": lambda: mx.image.RandomSizedCropAug((16, 12), 0.3, (0.75, 1.33), 1),
    "random_sized_crop_tuple": lambda: mx.image.RandomSizedCropAug((10, 10), (0.2, 0.6),
                                                                   (0.5, 2.0), 0),
    "center_crop": lambda: mx.image.CenterCropAug((20, 10), 1),
    "brightness": lambda: mx.image.BrightnessJitterAug(0.4),
    "contrast": lambda: mx.image.ContrastJitterAug(0.4),
    "saturation": lambda: mx.image.SaturationJitterAug(0.4),
    "hue": lambda: mx.image.HueJitterAug(0.4),
    "color_jitter": lambda: mx.image.ColorJitterAug(0.3, 0.3, 0.3),
    "lighting": lambda: mx.image.LightingAug(0.1, np.array([55.46, 4.794, 1.148]),
                                             np.array([[-0.5675, 0.7192, 0.4009],
                                                       [-0.5808, -0.0045, -0.8140],
                                                       [-0.5836, -0.6948, 0.4203]])),
    "color_normalize": lambda: mx.image.ColorNormalizeAug(mx.nd.array([120, 110, 100]),
                                                          mx.nd.array([50, 60, 70])),
    "random_gray": lambda: mx.image.RandomGrayAug(0.5),
    "flip": lambda: mx.image.HorizontalFlipAug(0.5),
    "cast": lambda: mx.image.CastAug(),
    "random_order": lambda: mx.image.RandomOrderAug([mx.image.BrightnessJitterAug(0.2),
                                                     mx.image.HorizontalFlipAug(0.7),
                                                     mx.image.RandomGrayAug(0.6)]),
    "sequential": lambda: mx.image.SequentialAug([mx.image.RandomCropAug((20, 20), 1),
                                                  mx.image.CastAug(),
                                                  mx.image.HueJitterAug(0.3)]),
}
FLOAT_INPUT = {"brightness", "contrast", "saturation", "hue", "color_jitter", "lighting",
               "color_normalize", "random_gray", "random_order", "sequential"}
CREATE_KWARGS = {
    "plain": dict(data_shape=(3, 16, 16)),
    "everything": dict(data_shape=(3, 16, 16), resize=24, rand_crop=True, rand_resize=True,
                       rand_mirror=True, mean=True, std=True, brightness=0.2, contrast=0.2,
                       saturation=0.2, hue=0.2, pca_noise=0.1, rand_gray=0.3,
                       inter_method=1),
    "crop_mirror_mean": dict(data_shape=(3, 20, 12), rand_crop=True, rand_mirror=True,
                             mean=np.array([100.0, 110.0, 120.0]), inter_method=10),
}


def augmenter_refs(src):
    out = {}
    for name, make in AUGS.items():
        for seed in range(3):
            aug = make()
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


ITER_CASES = {
    "rec_seq_pad": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec="images.rec"),
    "rec_idx_shuffle_discard": dict(batch_size=3, data_shape=(3, 10, 12),
                                    path_imgrec="images.rec", path_imgidx="images.idx",
                                    shuffle=True, rand_crop=True, rand_mirror=True,
                                    last_batch_handle="discard"),
    "rec_idx_roll_over": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec="images.rec",
                              path_imgidx="images.idx", shuffle=True, rand_crop=True,
                              last_batch_handle="roll_over"),
    "rec_parts": dict(batch_size=2, data_shape=(3, 12, 12), path_imgrec="images.rec",
                      path_imgidx="images.idx", num_parts=3, part_index=1),
    "lst_two_labels": dict(batch_size=4, data_shape=(3, 12, 14), path_imglist="images.lst",
                           path_root=".", label_width=2, dtype="float64", resize=13,
                           mean=True, std=True),
    "lst_shuffle_colour": dict(batch_size=5, data_shape=(3, 12, 12),
                               path_imglist="images.lst", path_root=".", label_width=2,
                               shuffle=True, rand_crop=True, rand_resize=True,
                               brightness=0.3, contrast=0.3, saturation=0.3, hue=0.2,
                               pca_noise=0.1, rand_gray=0.2),
    "rec_with_lst_labels": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec="images.rec",
                                path_imgidx="images.idx", path_imglist="images.lst",
                                label_width=2),
}
IMGLIST = [[float(i), f"imgs/img{i}.png"] for i in range(7)]


def iter_refs():
    out = {}
    cases = dict(ITER_CASES)
    cases["imglist"] = dict(batch_size=3, data_shape=(3, 12, 12), imglist=IMGLIST,
                            path_root=".", rand_mirror=True)
    for name, kwargs in cases.items():
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
