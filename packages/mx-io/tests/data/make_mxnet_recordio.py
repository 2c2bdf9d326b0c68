"""Writes the RecordIO reference files of these tests with MXNet 1.9.1.

Run from this folder with the reference interpreter (never by the tests):
    /tmp/mxnet-venv/bin/python make_mxnet_recordio.py
It writes
- mxnet_plain.rec: MXRecordIO records whose payloads (records.json) hold the
  RecordIO magic number at aligned and unaligned places, so MXNet splits
  some of them into multi-part records, plus every padding length;
- mxnet_indexed.rec/.idx: MXIndexedRecordIO of pack()ed records with scalar
  and array labels (headers in records.json);
- mxnet_images.rec/.idx: pack_img() of JPEG (quality 90 and 95) and PNG
  images; the images and cv2.imdecode's result of each record in images.npz;
- records.json: payloads (hex), tell() after each write, unpack() results.
"""
import hashlib
import json
import struct

import cv2
import mxnet as mx
import numpy as np

MAGIC = struct.pack("<I", 0xCED7230A)


def plain_payloads():
    rng = np.random.default_rng(7)
    noisy = bytearray(rng.integers(0, 256, 1000, dtype=np.uint8).tobytes())
    for pos in (0, 8, 12, 500, 996):       # aligned: MXNet splits here
        noisy[pos:pos + 4] = MAGIC
    noisy[301:305] = MAGIC                  # unaligned: kept as data
    big = bytearray(rng.integers(0, 256, 70001, dtype=np.uint8).tobytes())
    big[40000:40004] = MAGIC
    return [b"", b"a", b"ab", b"abc", b"abcd", b"abcde", b"record_0",
            MAGIC, MAGIC + b"xyz", b"1234" + MAGIC + b"5678", b"12" + MAGIC + b"5678",
            MAGIC + MAGIC, b"abcd" + MAGIC, b"abcd" + MAGIC + MAGIC + b"ef",
            bytes(noisy), bytes(big)]


def header_cases():
    return [
        (mx.recordio.IRHeader(0, 3.5, 17, 0), b"scalar label"),
        (mx.recordio.IRHeader(9, 1, 2**40 + 5, 3), b"int label, flag ignored"),
        (mx.recordio.IRHeader(0, [1.0, 2.5, -3.0], 5, 0), b"array label"),
        (mx.recordio.IRHeader(0, np.arange(7, dtype=np.float64), 6, 7), MAGIC + b"7 labels"),
        (mx.recordio.IRHeader(0, -0.25, 0, 0), b""),
    ]


def images():
    rng = np.random.default_rng(3)
    base = cv2.resize(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8), (20, 16),
                      interpolation=cv2.INTER_CUBIC)
    gray = cv2.cvtColor(base, cv2.COLOR_BGR2GRAY)
    return [(base, 90, ".jpg"), (base, 95, ".JPEG"), (base, 3, ".png"), (gray, 80, ".jpg")]


def main():
    out = {"plain": [], "indexed": [], "images": []}
    rec = mx.recordio.MXIndexedRecordIO("mxnet_plain.idx.unused", "mxnet_plain.rec", "w")
    for p in plain_payloads():
        rec.write(p)
        # Large payloads by digest, to keep this file small.
        entry = {"hex": p.hex()} if len(p) <= 2000 else {
            "sha256": hashlib.sha256(p).hexdigest(), "size": len(p)}
        out["plain"].append(dict(entry, tell=rec.tell()))
    rec.close()

    rec = mx.recordio.MXIndexedRecordIO("mxnet_indexed.idx", "mxnet_indexed.rec", "w")
    for key, (header, s) in zip((10, 3, 42, 7, 0), header_cases()):
        packed = mx.recordio.pack(header, s)
        rec.write_idx(key, packed)
        h, rest = mx.recordio.unpack(packed)
        label = h.label.tolist() if isinstance(h.label, np.ndarray) else h.label
        out["indexed"].append({"key": key, "packed": packed.hex(), "flag": h.flag,
                               "label": label, "id": h.id, "id2": h.id2, "rest": rest.hex()})
    rec.close()

    rec = mx.recordio.MXIndexedRecordIO("mxnet_images.idx", "mxnet_images.rec", "w")
    arrays = {}
    for i, (img, quality, fmt) in enumerate(images()):
        header = mx.recordio.IRHeader(0, float(i), i, 0)
        rec.write_idx(i, mx.recordio.pack_img(header, img, quality=quality, img_fmt=fmt))
        out["images"].append({"quality": quality, "img_fmt": fmt})
        arrays[f"source{i}"] = img
    rec.close()
    reader = mx.recordio.MXIndexedRecordIO("mxnet_images.idx", "mxnet_images.rec", "r")
    for i in reader.keys:
        for iscolor in (-1, 0, 1):
            arrays[f"decoded{i}_{iscolor}"] = mx.recordio.unpack_img(reader.read_idx(i), iscolor)[1]
    reader.close()
    np.savez_compressed("images.npz", **arrays)
    with open("records.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
