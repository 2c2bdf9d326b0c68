"""Writes images.rec/.idx/.lst (12 small JPEG and PNG images, two labels
each) with MXNet 1.9.1's recordio, and MXNet 1.9.1's ImageRecordIter /
ImageRecordUInt8Iter batches for deterministic settings (reference.npz),
which tests/test_image_record_iter.py compares against.

Run with MXNet 1.9.1's Python (no mx needed):
    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_reference.py
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [(48, 64), (64, 48), (50, 50), (40, 72), (72, 40), (45, 57),
         (60, 60), (44, 52), (56, 44), (41, 41), (70, 52), (52, 70)]

# Deterministic settings (no random draws), each read for two epochs.
CONFIGS = {
    "resize_center_meanstd": dict(data_shape=(3, 32, 32), batch_size=5, resize=40,
                                  mean_r=123.68, mean_g=116.28, mean_b=103.53,
                                  std_r=58.395, std_g=57.12, std_b=57.375),
    "center_scale_mirror": dict(data_shape=(3, 36, 36), batch_size=4, scale=1 / 255.0,
                                mirror=True),
    "pad_fill": dict(data_shape=(3, 48, 48), batch_size=6, resize=40, pad=6, fill_value=17),
    "cubic_labels2": dict(data_shape=(3, 30, 30), batch_size=5, resize=34, inter_method=2,
                          round_batch=False),
    "grey": dict(data_shape=(1, 28, 28), batch_size=4, resize=30),
    "uint8": dict(data_shape=(3, 32, 32), batch_size=5, resize=36, uint8=True),
    # mean_img.bin is written by MXNet's first iterator (the file does not
    # exist yet), then read by the second.
    "mean_img_create": dict(data_shape=(3, 32, 32), batch_size=4, resize=36,
                            mean_img="mean_img.bin"),
    "mean_img": dict(data_shape=(3, 32, 32), batch_size=4, resize=36, mean_img="mean_img.bin",
                     std_r=2.0, std_g=4.0, std_b=8.0, scale=0.5),
    "imglist": dict(data_shape=(3, 32, 32), batch_size=4, resize=32, label_width=3,
                    path_imglist="images.lst"),
}


def image(i, h, w):
    """A smooth colour pattern (little JPEG noise), different for each i."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    b = 127 + 100 * np.sin(x / (5 + i) + i)
    g = 127 + 100 * np.cos(y / (7 + i) - i)
    r = 255 * (x + y) / (h + w)
    return np.clip(np.stack([b, g, r], axis=2), 0, 255).astype(np.uint8)


def write_records():
    if os.path.exists(os.path.join(HERE, "mean_img.bin")):
        os.remove(os.path.join(HERE, "mean_img.bin"))
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(HERE, "images.idx"),
                                        os.path.join(HERE, "images.rec"), "w")
    with open(os.path.join(HERE, "images.lst"), "w") as lst:
        for i, (h, w) in enumerate(SIZES):
            header = mx.recordio.IRHeader(0, [float(i), 100.0 + i], i, 0)
            fmt = ".png" if i % 4 == 3 else ".jpg"
            rec.write_idx(i, mx.recordio.pack_img(header, image(i, h, w), quality=95,
                                                  img_fmt=fmt))
            lst.write(f"{i}\t{i * 3.0}\t{i * 3.0 + 1}\t{i * 3.0 + 2}\timg{i}{fmt}\n")
    rec.close()


def run(name, cfg):
    cfg = dict(cfg)
    cfg.setdefault("label_width", 2)      # the records hold two labels
    cls = mx.io.ImageRecordUInt8Iter if cfg.pop("uint8", False) else mx.io.ImageRecordIter
    for key in ("path_imglist", "mean_img"):
        if key in cfg:
            cfg[key] = os.path.join(HERE, cfg[key])
    it = cls(path_imgrec=os.path.join(HERE, "images.rec"), preprocess_threads=1, **cfg)
    out = {}
    for epoch in range(2):
        for k, batch in enumerate(it):
            if epoch == 0:      # the second epoch checks order, labels and pad
                out[f"{name}/{epoch}/{k}/data"] = batch.data[0].asnumpy()
            out[f"{name}/{epoch}/{k}/label"] = batch.label[0].asnumpy()
            out[f"{name}/{epoch}/{k}/pad"] = np.array(batch.pad)
        it.reset()
    return out


def main():
    write_records()
    # The tests read the settings from here (paths relative to this folder).
    out = {"configs": np.array(json.dumps(CONFIGS))}
    for name, cfg in CONFIGS.items():
        out.update(run(name, cfg))
    np.savez_compressed(os.path.join(HERE, "reference.npz"), **out)


if __name__ == "__main__":
    main()
