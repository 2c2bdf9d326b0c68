"""LibSVMIter against MXNet 1.9.1's batches (data/make_mxnet_libsvm.py),
and its parts, round_batch and malformed input."""
import json
import pathlib

import numpy as np
import pytest
import scipy.sparse as spsp
from hypothesis import given, settings, strategies as st

from mx_io.io import LibSVMIter
from mx_io.io._libsvm import LibSVMFormatError

DATA = pathlib.Path(__file__).parent / "data" / "libsvm"
REFERENCE = json.loads((DATA / "mxnet_batches.json").read_text())


def dense_of(csr):
    return spsp.csr_matrix((csr["values"], csr["indices"], csr["indptr"]),
                           shape=csr["shape"]).toarray()


def epochs_of(it, epochs):
    """[epoch][batch] -> {'data', 'label', 'index', 'pad'} as the reference records them."""
    out = []
    for _ in range(epochs):
        batches = []
        for b in it:
            data, label = b.data[0], b.label[0]
            assert data.stype == "csr"
            rec = {"data": {"indptr": data.indptr.asnumpy().tolist(),
                            "indices": data.indices.asnumpy().tolist(),
                            "values": data.data.asnumpy().tolist(), "shape": list(data.shape)},
                   "index": b.index.tolist(), "pad": int(b.pad)}
            if label.stype == "csr":
                rec["label"] = {"indptr": label.indptr.asnumpy().tolist(),
                                "indices": label.indices.asnumpy().tolist(),
                                "values": label.data.asnumpy().tolist(),
                                "shape": list(label.shape)}
            else:
                rec["label"] = label.asnumpy().tolist()
            batches.append(rec)
        out.append(batches)
        it.reset()
    return out


def make_iter(kwargs):
    args = dict(kwargs, data_libsvm=str(DATA / kwargs["data_libsvm"]))
    if "label_libsvm" in args:
        args["label_libsvm"] = str(DATA / args["label_libsvm"])
    return LibSVMIter(**args)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_matches_mxnet(name):
    case = REFERENCE[name]
    ours = epochs_of(make_iter(case["kwargs"]), len(case["epochs"]))
    assert len(ours) == len(case["epochs"])
    for got_epoch, want_epoch in zip(ours, case["epochs"]):
        assert [(b["index"], b["pad"]) for b in got_epoch] == \
            [(b["index"], b["pad"]) for b in want_epoch]
        for got, want in zip(got_epoch, want_epoch):
            for field in ("indptr", "indices", "shape"):
                assert got["data"][field] == want["data"][field]
            # dmlc's number parser is not correctly rounded (1 ulp off at
            # times); ours is (std::from_chars).
            np.testing.assert_array_max_ulp(np.float32(got["data"]["values"]),
                                            np.float32(want["data"]["values"]), maxulp=1)
            if isinstance(want["label"], dict):
                np.testing.assert_array_max_ulp(np.float32(dense_of(got["label"])),
                                                np.float32(dense_of(want["label"])), maxulp=1)
            else:
                np.testing.assert_array_max_ulp(np.float32(got["label"]),
                                                np.float32(want["label"]), maxulp=1)


def test_provide_data_and_label():
    it = make_iter(REFERENCE["label_file"]["kwargs"])
    assert it.provide_data[0].shape == (4, 12) and it.provide_label[0].shape == (4, 4)
    assert it.next().label[0].stype == "csr"
    it = make_iter(REFERENCE["plain"]["kwargs"])
    assert it.provide_label[0].shape == (5,) and it.next().label[0].stype == "default"


def write_rows(path, rows, columns, rng):
    lines = []
    for r in range(rows):
        cols = np.sort(rng.choice(columns, size=rng.integers(0, 4), replace=False))
        lines.append(" ".join([str(r)] + [f"{c}:{r + c / 8}" for c in cols]))
    path.write_text("\n".join(lines) + "\n")


def rows_of(it):
    """Every row of one epoch without the round-batch overflow: {label: dense row}."""
    out = {}
    for b in it:
        dense, labels = b.data[0].asnumpy(), b.label[0].asnumpy()
        keep = len(labels) - b.pad
        out.update({float(l): tuple(row) for l, row in zip(labels[:keep], dense[:keep])})
    return out


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 40), num_parts=st.integers(1, 5), seed=st.integers(0, 99))
def test_parts_cover_every_row_once(tmp_path_factory, rows, num_parts, seed):
    path = tmp_path_factory.mktemp("parts") / "d.libsvm"
    write_rows(path, rows, 6, np.random.default_rng(seed))
    whole = rows_of(LibSVMIter(data_libsvm=str(path), data_shape=(6,), batch_size=1))
    seen = {}
    for k in range(num_parts):
        try:
            it = LibSVMIter(data_libsvm=str(path), data_shape=(6,), batch_size=1,
                            num_parts=num_parts, part_index=k)
        except ValueError as e:           # an empty part holds no batch
            assert "holds no batch" in str(e)
            continue
        part = rows_of(it)
        assert not set(part) & set(seen)
        seen.update(part)
    assert seen == whole and len(whole) == rows


def test_label_file_in_parts_follows_data(tmp_path):
    rng = np.random.default_rng(3)
    write_rows(tmp_path / "d.libsvm", 12, 5, rng)
    (tmp_path / "l.libsvm").write_text((tmp_path / "d.libsvm").read_text())
    for k in range(2):
        it = LibSVMIter(data_libsvm=str(tmp_path / "d.libsvm"), data_shape=(5,), batch_size=2,
                        label_libsvm=str(tmp_path / "l.libsvm"), label_shape=(5,),
                        num_parts=2, part_index=k)
        for b in it:
            np.testing.assert_array_equal(b.data[0].asnumpy(), b.label[0].asnumpy())


def test_long_file_in_many_blocks(tmp_path):
    rng = np.random.default_rng(0)
    rows = 40000        # about 1.5 MB: the reader's buffer refills mid-line
    write_rows(tmp_path / "d.libsvm", rows, 50, rng)
    it = LibSVMIter(data_libsvm=str(tmp_path / "d.libsvm"), data_shape=(50,), batch_size=1000)
    got = spsp.vstack([b.data[0].asscipy() for b in it]).toarray()
    lines = (tmp_path / "d.libsvm").read_text().splitlines()
    want = np.zeros((rows, 50), np.float32)
    for r, line in enumerate(lines):
        for pair in line.split()[1:]:
            c, v = pair.split(":")
            want[r, int(c)] = float(v)
    np.testing.assert_array_equal(got, want)


def test_blank_lines_crlf_tabs_comments(tmp_path):
    # The last line has no newline.
    (tmp_path / "d").write_bytes(b"\n1\t0:1.5  2:2 \r\n\n# only a comment\n+2 1:-1e-1 # c")
    b = LibSVMIter(data_libsvm=str(tmp_path / "d"), data_shape=(3,), batch_size=2).next()
    np.testing.assert_array_equal(b.data[0].asnumpy(), np.float32([[1.5, 0, 2], [0, -0.1, 0]]))
    np.testing.assert_array_equal(b.label[0].asnumpy(), [1, 2])


@pytest.mark.parametrize("text, match", [
    ("1 0:1\n2 1:abc\n", r"d, line 2 \(byte offset 6\), column 5: value 'abc' is not a number"),
    ("1 0:1\n\n2 3:1\n", r"line 3 \(byte offset 7\), column 3: index 3 is out of range \[0, 3\)"),
    ("1 -1:2\n", r"line 1 .*column 3: index -1 is out of range"),
    ("1 2\n", r"line 1 .*column 3: '2' has no ':'"),
    ("x 1:2\n", r"line 1 .*column 1: label 'x' is not a number"),
    ("1 a:2\n", r"column 3: index 'a' is not an integer"),
    ("1 1:2:3\n", r"value '2:3' is not a number"),
])
def test_malformed_lines_name_file_line_and_column(tmp_path, text, match):
    (tmp_path / "d").write_text(text)
    with pytest.raises(LibSVMFormatError, match="LibSVMIter: data_libsvm .*" + match):
        LibSVMIter(data_libsvm=str(tmp_path / "d"), data_shape=(3,), batch_size=2)


def test_malformed_label_file_and_short_label_file(tmp_path):
    (tmp_path / "d").write_text("1 0:1\n2 1:1\n3 2:1\n")
    (tmp_path / "l").write_text("0 0:1\n0 5:1\n")
    with pytest.raises(LibSVMFormatError, match=r"label_libsvm .*l, line 2 .*index 5 is out"):
        LibSVMIter(data_libsvm=str(tmp_path / "d"), data_shape=(3,), batch_size=2,
                   label_libsvm=str(tmp_path / "l"), label_shape=(2,))
    (tmp_path / "l").write_text("0 0:1\n0 1:1\n")
    it = LibSVMIter(data_libsvm=str(tmp_path / "d"), data_shape=(3,), batch_size=2,
                    label_libsvm=str(tmp_path / "l"), label_shape=(2,))
    it.next()                           # the first batch, read at construction
    with pytest.raises(LibSVMFormatError, match="fewer rows than data_libsvm"):
        it.next()


def test_error_after_first_batch_surfaces_in_next(tmp_path):
    (tmp_path / "d").write_text("1 0:1\n2 1:1\n3 1:?\n")
    it = LibSVMIter(data_libsvm=str(tmp_path / "d"), data_shape=(3,), batch_size=2)
    with pytest.raises(LibSVMFormatError, match="line 3"):
        it.next()
        it.next()


def test_arguments(tmp_path):
    (tmp_path / "d").write_text("1 0:1\n")
    d = str(tmp_path / "d")
    with pytest.raises(ValueError, match="round_batch=False is not supported"):
        LibSVMIter(data_libsvm=d, data_shape=(3,), batch_size=1, round_batch=False)
    with pytest.raises(ValueError, match="part_index must be in"):
        LibSVMIter(data_libsvm=d, data_shape=(3,), batch_size=1, num_parts=2, part_index=2)
    with pytest.raises(ValueError, match="'data_shape' must be 1-D"):
        LibSVMIter(data_libsvm=d, data_shape=(3, 2), batch_size=1)
    with pytest.raises(ValueError, match="label_shape must be \\(1,\\) without label_libsvm"):
        LibSVMIter(data_libsvm=d, data_shape=(3,), batch_size=1, label_shape=(2,))
    with pytest.raises(ValueError, match="'dtype' must be None or 'float32'"):
        LibSVMIter(data_libsvm=d, data_shape=(3,), batch_size=1, dtype="float64")
    with pytest.raises(FileNotFoundError, match="data_libsvm"):
        LibSVMIter(data_libsvm=str(tmp_path / "none"), data_shape=(3,), batch_size=1)
    with pytest.raises(TypeError, match="'batch_size' is required"):
        LibSVMIter(data_libsvm=d, data_shape=(3,))
    with pytest.raises(LibSVMFormatError, match="too few to fill a round batch"):
        LibSVMIter(data_libsvm=d, data_shape=(3,), batch_size=3)
