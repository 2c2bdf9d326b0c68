"""CSVIter against MXNet 1.9.1's batches on the same files
(data/make_iter_reference.py), and its errors on malformed files."""
import pathlib

import numpy as np
import pytest

from mx_io.io import CSVIter, MXDataIter

REF = pathlib.Path(__file__).parent / "data" / "iter_reference"
CASES = sorted(p.stem for p in REF.glob("csv_bs*.npz"))


def compare(ours, ref, round_batch=True):
    assert [len(e) for e in ours] == [len(e) for e in ref]
    for got_epoch, ref_epoch in zip(ours, ref):
        for (data, label, pad, index), want in zip(got_epoch, ref_epoch):
            assert pad == int(want["pad"])
            # Without round_batch MXNet leaves the previous batch's rows in
            # the padding; ours holds zeros there.  Compare the real rows.
            keep = len(data) - (0 if round_batch else pad)
            assert data.dtype == want["data"].dtype and data.shape == want["data"].shape
            np.testing.assert_array_equal(data[:keep], want["data"][:keep])
            np.testing.assert_array_equal(label[:keep], want["label"][:keep])
            np.testing.assert_array_equal(index[:keep], want["index"][:keep])


@pytest.mark.parametrize("name", CASES)
def test_matches_mxnet(name, iter_ref):
    _, bs, rb, shape = name.split("_")
    it = CSVIter(data_csv=str(iter_ref.INPUTS / "data.csv"),
                 label_csv=str(iter_ref.INPUTS / "label.csv"),
                 data_shape=tuple(int(s) for s in shape.split("x")), batch_size=int(bs[2:]),
                 round_batch=rb == "rb1")
    assert isinstance(it, MXDataIter)
    compare(iter_ref.batches(it, 3), iter_ref.reference(name), rb == "rb1")
    it.close()


def test_no_label_and_int32(iter_ref):
    it = CSVIter(data_csv=str(iter_ref.INPUTS / "data.csv"), data_shape=(6,), batch_size=4)
    assert [(d.name, d.shape) for d in it.provide_data + it.provide_label] == \
        [("data", (4, 6)), ("softmax_label", (4,))]
    compare(iter_ref.batches(it, 2), iter_ref.reference("csv_nolabel_bs4"))
    it = CSVIter(data_csv=str(iter_ref.INPUTS / "data_int.csv"), data_shape=(3,), batch_size=4,
                 dtype="int32", round_batch=False)
    compare(iter_ref.batches(it, 2), iter_ref.reference("csv_int32_bs4"), round_batch=False)


@pytest.mark.parametrize("dtype", ["float64", "int64", "float16", "uint8"])
def test_dtypes(tmp_path, dtype):
    values = np.arange(24).reshape(8, 3) % 50
    (tmp_path / "d.csv").write_text("\n".join(",".join(map(str, r)) for r in values) + "\n")
    it = CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(3,), batch_size=4, dtype=dtype)
    got = np.concatenate([b.data[0].asnumpy() for b in it])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, values)


def test_directory_blank_lines_crlf_and_spaces(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.csv").write_text("1, 2\r\n\r\n3 ,+4\n")
    (tmp_path / "dir" / "b.csv").write_text("5,6e0\n7,8")          # no final newline
    it = CSVIter(data_csv=str(tmp_path / "dir"), data_shape=(2,), batch_size=2)
    got = [b.data[0].asnumpy().tolist() for b in it]
    assert got == [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]


def test_long_file_in_many_blocks(tmp_path):
    rng = np.random.RandomState(0)
    values = rng.randint(-1000, 1000, size=(30000, 7)) / 8       # exact in float32
    np.savetxt(tmp_path / "big.csv", values, delimiter=",", fmt="%.3f")
    np.savetxt(tmp_path / "lab.csv", values[:, :1] * 2, delimiter=",", fmt="%.3f")
    it = CSVIter(data_csv=str(tmp_path / "big.csv"), label_csv=str(tmp_path / "lab.csv"),
                 data_shape=(7,), batch_size=1000, round_batch=False)
    batches = list(it)
    data = np.concatenate([b.data[0].asnumpy() for b in batches])
    label = np.concatenate([b.label[0].asnumpy() for b in batches])
    np.testing.assert_array_equal(data, values.astype(np.float32))
    np.testing.assert_array_equal(label, values[:, 0].astype(np.float32) * 2)
    assert np.concatenate([b.index for b in batches]).tolist() == list(range(30000))


@pytest.mark.parametrize("text,match", [
    ("1,2,3\n4,x5,6\n", r"bad\.csv, line 2: column 2: 'x5' is not a number"),
    ("1,2,3\n\n4,5\n", r"bad\.csv, line 3: the row has 2 values, the shape needs 3"),
    ("1,2,3\n4,5,6,7\n", r"bad\.csv, line 2: the row has 4 values, the shape needs 3"),
    ("1,2,3\n4,5,\n", r"bad\.csv, line 2: column 3: '' is not a number"),
])
def test_malformed_rows_name_file_and_line(tmp_path, text, match):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(ValueError, match=match):
        list(CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(3,), batch_size=1))


def test_error_after_first_batch_surfaces_in_next(tmp_path):
    (tmp_path / "bad.csv").write_text("1\n2\n3\n4\nnan?\n")
    it = CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(1,), batch_size=2)
    it.next(), it.next()
    with pytest.raises(ValueError, match="line 5"):
        it.next()
    it.close()


def test_missing_files_and_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_csv.*nope.csv"):
        CSVIter(data_csv=str(tmp_path / "nope.csv"), data_shape=(1,), batch_size=1)
    (tmp_path / "d.csv").write_text("1\n2\n")
    (tmp_path / "l.csv").write_text("1\n")
    with pytest.raises(ValueError, match="label_csv .* fewer rows"):
        list(CSVIter(data_csv=str(tmp_path / "d.csv"), label_csv=str(tmp_path / "l.csv"),
                     data_shape=(1,), batch_size=2))
    with pytest.raises(TypeError, match="keyword"):
        CSVIter(str(tmp_path / "d.csv"))
    with pytest.raises(TypeError, match="'data_shape' is required"):
        CSVIter(data_csv=str(tmp_path / "d.csv"), batch_size=1)
    with pytest.raises(ValueError, match="fewer rows than batch_size=5"):
        CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(1,), batch_size=5)
    with pytest.raises(ValueError, match="'dtype'"):
        CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(1,), batch_size=1, dtype="bool")
