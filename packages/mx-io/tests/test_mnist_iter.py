"""MNISTIter against MXNet 1.9.1's batches on the same idx files
(data/make_iter_reference.py), and its errors on broken files."""
import gzip
import pathlib
import struct

import numpy as np
import pytest

from mx_io.io import MNISTIter

REF = pathlib.Path(__file__).parent / "data" / "iter_reference"
CASES = sorted(p.stem for p in REF.glob("mnist_*.npz"))


def files(iter_ref):
    return (str(iter_ref.INPUTS / "images-idx3-ubyte"),
            str(iter_ref.INPUTS / "labels-idx1-ubyte"))


@pytest.mark.parametrize("name", CASES)
def test_matches_mxnet(name, iter_ref):
    image, label = files(iter_ref)
    with np.load(REF / f"{name}.npz") as z:       # the arguments MXNet was given
        kwargs = {k[5:]: z[k].item() for k in z.files if k.startswith("meta_")}
    it = MNISTIter(image=image, label=label, silent=True, **kwargs)
    ours, ref = iter_ref.batches(it, 2), iter_ref.reference(name)
    assert [len(e) for e in ours] == [len(e) for e in ref]
    for got_epoch, ref_epoch in zip(ours, ref):
        for (data, lab, pad, index), want in zip(got_epoch, ref_epoch):
            assert data.dtype == want["data"].dtype and data.shape == want["data"].shape
            np.testing.assert_array_equal(data, want["data"])
            np.testing.assert_array_equal(lab, want["label"])
            np.testing.assert_array_equal(index, want["index"])
            assert pad == int(want["pad"])
    it.close()


def test_gzip_files_read_alike(iter_ref, tmp_path):
    image, label = files(iter_ref)
    for src in (image, label):
        (tmp_path / (pathlib.Path(src).name + ".gz")).write_bytes(
            gzip.compress(pathlib.Path(src).read_bytes()))
    plain = MNISTIter(image=image, label=label, batch_size=10, silent=True)
    packed = MNISTIter(image=str(tmp_path / "images-idx3-ubyte.gz"),
                       label=str(tmp_path / "labels-idx1-ubyte.gz"), batch_size=10, silent=True)
    for a, b in zip(plain, packed):
        np.testing.assert_array_equal(a.data[0].asnumpy(), b.data[0].asnumpy())
    assert plain.provide_data[0].shape == (10, 1, 6, 7)


def _idx(magic, dims, payload=None):
    payload = bytes(int(np.prod(dims))) if payload is None else payload
    return struct.pack(f">{1 + len(dims)}I", magic, *dims) + payload


@pytest.mark.parametrize("image_bytes,match", [
    (_idx(2049, (4, 2, 2)), r"img: magic number 2049 at byte 0, expected 2051"),
    (_idx(2051, (4, 2, 2))[:-3], r"img: truncated: dims \(4, 2, 2\) need 32 bytes, the file "
                                 r"ends at byte 29"),
    (_idx(2051, (4, 2, 2))[:10], r"img: truncated idx header: 10 bytes, 16 needed"),
    (gzip.compress(_idx(2051, (4, 2, 2)))[:-9], r"img: broken gzip data"),
])
def test_broken_files_name_file_and_offset(tmp_path, image_bytes, match):
    (tmp_path / "img").write_bytes(image_bytes)
    (tmp_path / "lab").write_bytes(_idx(2049, (4,)))
    with pytest.raises(ValueError, match=match):
        MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"), batch_size=2)


def test_arguments(tmp_path):
    (tmp_path / "img").write_bytes(_idx(2051, (4, 2, 2)))
    (tmp_path / "lab").write_bytes(_idx(2049, (3,)))
    with pytest.raises(ValueError, match="4 images but .* 3 labels"):
        MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"))
    (tmp_path / "lab").write_bytes(_idx(2049, (4,)))
    with pytest.raises(ValueError, match="no batch"):
        MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"), batch_size=5)
    with pytest.raises(ValueError, match="part_index"):
        MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"), num_parts=2,
                  part_index=2)
    with pytest.raises(FileNotFoundError, match="nope"):
        MNISTIter(image=str(tmp_path / "nope"), label=str(tmp_path / "lab"))
    it = MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"), batch_size=2,
                   dtype="float64", silent=True)
    assert it.next().data[0].dtype == np.float64
