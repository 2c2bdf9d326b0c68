"""mx_io.recordio against files MXNet 1.9.1 wrote (tests/data, made by
make_mxnet_recordio.py): ours reads them and writes the same bytes."""
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest

from mx_engine import MXNetError
from mx_io import recordio
from mx_io._recordio import RecordReader
from mx_io.errors import MissingKeyError, RecordFormatError, RecordIOError

DATA = os.path.join(os.path.dirname(__file__), "data")
with open(os.path.join(DATA, "records.json")) as _f:
    EXPECTED = json.load(_f)


def data(name):
    return os.path.join(DATA, name)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def matches(entry, payload):
    if "hex" in entry:
        return payload == bytes.fromhex(entry["hex"])
    return len(payload) == entry["size"] and hashlib.sha256(payload).hexdigest() == entry["sha256"]


def read_all(rec):
    out = []
    while (item := rec.read()) is not None:
        out.append(item)
    return out


def test_reads_mxnet_file_with_multipart_records():
    rec = recordio.MXRecordIO(data("mxnet_plain.rec"), "r")
    payloads = read_all(rec)
    assert len(payloads) == len(EXPECTED["plain"])
    for entry, payload in zip(EXPECTED["plain"], payloads):
        assert matches(entry, payload)
    assert rec.read() is None        # stays at the end
    rec.close()


@pytest.mark.parametrize("chunk_size", [16, 20, 37, 4096])
def test_small_chunks_read_the_same_records(chunk_size):
    """Records straddle and outgrow the chunk: refills and growth."""
    reader = RecordReader(data("mxnet_plain.rec"), chunk_size)
    for entry in EXPECTED["plain"]:
        assert matches(entry, reader.read())
        assert reader.tell() == entry["tell"]
    assert reader.read() is None


def test_writes_mxnet_bytes_and_tells(tmp_path):
    payloads = read_all(recordio.MXRecordIO(data("mxnet_plain.rec"), "r"))
    rec = recordio.MXRecordIO(tmp_path / "ours.rec", "w")
    assert rec.tell() == 0
    for entry, payload in zip(EXPECTED["plain"], payloads):
        rec.write(payload)
        assert rec.tell() == entry["tell"]
    rec.close()
    assert read_bytes(tmp_path / "ours.rec") == read_bytes(data("mxnet_plain.rec"))


def test_write_accepts_bytes_like_objects(tmp_path):
    rec = recordio.MXRecordIO(tmp_path / "a.rec", "w")
    rec.write(bytearray(b"abc"))
    rec.write(memoryview(b"defgh"))
    rec.write(np.arange(3, dtype=np.uint8).tobytes())
    rec.close()
    assert read_all(recordio.MXRecordIO(tmp_path / "a.rec", "r")) == [b"abc", b"defgh",
                                                                      b"\x00\x01\x02"]


def test_indexed_reads_mxnet_index_and_headers():
    rec = recordio.MXIndexedRecordIO(data("mxnet_indexed.idx"), data("mxnet_indexed.rec"), "r")
    assert rec.keys == [e["key"] for e in EXPECTED["indexed"]]
    for entry in reversed(EXPECTED["indexed"]):           # random access
        packed = rec.read_idx(entry["key"])
        assert packed == bytes.fromhex(entry["packed"])
        header, rest = recordio.unpack(packed)
        assert (header.flag, header.id, header.id2) == (entry["flag"], entry["id"], entry["id2"])
        np.testing.assert_array_equal(header.label, np.float32(entry["label"]))
        assert rest == bytes.fromhex(entry["rest"])
        if entry["flag"]:
            assert header.label.dtype == np.float32


def test_indexed_writes_mxnet_bytes(tmp_path):
    rec = recordio.MXIndexedRecordIO(tmp_path / "a.idx", tmp_path / "a.rec", "w")
    for entry in EXPECTED["indexed"]:
        rec.write_idx(entry["key"], bytes.fromhex(entry["packed"]))
    rec.close()
    assert read_bytes(tmp_path / "a.rec") == read_bytes(data("mxnet_indexed.rec"))
    assert read_bytes(tmp_path / "a.idx") == read_bytes(data("mxnet_indexed.idx"))


def test_pack_matches_mxnet():
    magic = bytes.fromhex("0a23d7ce")
    cases = [
        (recordio.IRHeader(0, 3.5, 17, 0), b"scalar label"),
        (recordio.IRHeader(9, 1, 2**40 + 5, 3), b"int label, flag ignored"),
        (recordio.IRHeader(0, [1.0, 2.5, -3.0], 5, 0), b"array label"),
        ((0, np.arange(7, dtype=np.float64), 6, 7), magic + b"7 labels"),   # a plain tuple
        (recordio.IRHeader(0, -0.25, 0, 0), b""),
    ]
    for (header, payload), entry in zip(cases, EXPECTED["indexed"]):
        assert recordio.pack(header, payload) == bytes.fromhex(entry["packed"])


def test_pack_img_matches_mxnet_and_unpack_img_decodes_as_mxnet():
    arrays = np.load(data("images.npz"))
    rec = recordio.MXIndexedRecordIO(data("mxnet_images.idx"), data("mxnet_images.rec"), "r")
    for i, entry in enumerate(EXPECTED["images"]):
        header = recordio.IRHeader(0, float(i), i, 0)
        ours = recordio.pack_img(header, arrays[f"source{i}"], quality=entry["quality"],
                                 img_fmt=entry["img_fmt"])
        theirs = rec.read_idx(i)
        assert ours == theirs
        for iscolor in (-1, 0, 1):
            got_header, img = recordio.unpack_img(theirs, iscolor)
            assert got_header == (0, float(i), i, 0)
            np.testing.assert_array_equal(img, arrays[f"decoded{i}_{iscolor}"])


def test_unpack_img_default_is_bgr_as_stored():
    img = np.zeros((8, 8, 3), np.uint8)
    img[..., 0] = 255                                        # pure blue in BGR
    _, out = recordio.unpack_img(recordio.pack_img((0, 1, 2, 0), img, img_fmt=".png"))
    np.testing.assert_array_equal(out, img)


def test_pickle_state_reopens_like_mxnet(tmp_path):
    reader = recordio.MXIndexedRecordIO(data("mxnet_indexed.idx"), data("mxnet_indexed.rec"),
                                        "r")
    first = reader.read()
    clone = pickle.loads(pickle.dumps(reader))
    state = reader.__getstate__()
    assert state["uri"] == data("mxnet_indexed.rec") and state["fidx"] is None
    assert set(state) >= {"uri", "flag", "pid", "is_open", "writable", "idx_path", "idx",
                          "keys", "key_type"}
    assert not reader.is_open                               # MXNet closes on pickling too
    assert clone.is_open and clone.read() == first          # reopened at the start
    assert clone.keys == reader.keys
    closed = pickle.loads(pickle.dumps(reader))
    assert not closed.is_open


def test_reset_and_closed_and_wrong_mode_errors(tmp_path):
    rec = recordio.MXRecordIO(data("mxnet_plain.rec"), "r")
    a = rec.read()
    rec.read()
    rec.reset()
    assert rec.read() == a
    with pytest.raises(MXNetError, match="opened with flag 'r'"):
        rec.write(b"x")
    rec.close()
    rec.close()
    with pytest.raises(MXNetError, match="is closed"):
        rec.read()
    with pytest.raises(ValueError, match="invalid flag 'a'"):
        recordio.MXRecordIO(tmp_path / "x.rec", "a")
    with pytest.raises(FileNotFoundError):
        recordio.MXRecordIO(tmp_path / "missing.rec", "r")
    writer = recordio.MXRecordIO(tmp_path / "w.rec", "w")
    writer.write(b"abc")
    writer.reset()                                          # truncates, as MXNet
    writer.close()
    assert os.path.getsize(tmp_path / "w.rec") == 0


def test_other_process_guard():
    rec = recordio.MXIndexedRecordIO(data("mxnet_indexed.idx"), data("mxnet_indexed.rec"), "r")
    rec.pid = -1                                          # as if opened before a fork
    with pytest.raises(MXNetError, match="multiple processes"):
        rec.read()
    first = EXPECTED["indexed"][0]
    assert rec.read_idx(first["key"]) == bytes.fromhex(first["packed"])   # seek reopens


def test_forked_reader_reopens_on_seek(tmp_path):
    script = (
        "import sys; from mx_io import recordio\n"
        "rec = recordio.MXIndexedRecordIO(sys.argv[1], sys.argv[2], 'r')\n"
        "import multiprocessing as mp\n"
        "def child(q): q.put(rec.read_idx(rec.keys[-1]))\n"
        "ctx = mp.get_context('fork'); q = ctx.Queue(); p = ctx.Process(target=child, args=(q,))\n"
        "p.start(); print(q.get(timeout=30).hex()); p.join()\n")
    out = subprocess.run([sys.executable, "-c", script, data("mxnet_indexed.idx"),
                          data("mxnet_indexed.rec")], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == EXPECTED["indexed"][-1]["packed"], out.stderr


def test_missing_key_and_bad_index_line(tmp_path):
    rec = recordio.MXIndexedRecordIO(data("mxnet_indexed.idx"), data("mxnet_indexed.rec"), "r")
    with pytest.raises(KeyError, match="key 999 is not in index"):
        rec.read_idx(999)
    with pytest.raises(MissingKeyError):
        rec.seek(-1)
    shutil.copy(data("mxnet_indexed.rec"), tmp_path / "a.rec")
    (tmp_path / "a.idx").write_text("10\t0\n3 x\n")
    with pytest.raises(RecordFormatError, match=r"line 2 of index .*a\.idx"):
        recordio.MXIndexedRecordIO(tmp_path / "a.idx", tmp_path / "a.rec", "r")


def test_string_keys(tmp_path):
    rec = recordio.MXIndexedRecordIO(tmp_path / "s.idx", tmp_path / "s.rec", "w", key_type=str)
    rec.write_idx("b", b"bee")
    rec.write_idx("a", b"ay")
    rec.close()
    rec = recordio.MXIndexedRecordIO(tmp_path / "s.idx", tmp_path / "s.rec", "r", key_type=str)
    assert rec.keys == ["b", "a"] and rec.read_idx("a") == b"ay"


def test_seek_outside_file_names_offset():
    reader = RecordReader(data("mxnet_indexed.rec"))
    with pytest.raises(RecordIOError, match=r"mxnet_indexed\.rec', byte offset 100000"):
        reader.seek(100000)
    reader.seek(4)                                        # not a record start
    with pytest.raises(RecordIOError, match="byte offset 4: bad magic"):
        reader.read()


def test_huge_length_is_an_error_not_an_allocation(tmp_path):
    path = tmp_path / "huge.rec"
    path.write_bytes(bytes.fromhex("0a23d7ce") + (2**29 - 1).to_bytes(4, "little") + b"abcd")
    with pytest.raises(RecordIOError, match=r"byte offset 0: record part claims 536870911 "
                                            r"data bytes but only 4 remain"):
        recordio.MXRecordIO(path, "r").read()


def test_truncated_header_and_bad_continuation(tmp_path):
    good = read_bytes(data("mxnet_plain.rec"))
    (tmp_path / "t.rec").write_bytes(good[:4] + good[4:6])
    with pytest.raises(RecordIOError, match="byte offset 0: truncated record header: 6 bytes"):
        recordio.MXRecordIO(tmp_path / "t.rec", "r").read()
    # A record that starts with a "middle part" flag.
    (tmp_path / "f.rec").write_bytes(bytes.fromhex("0a23d7ce") + (2 << 29).to_bytes(4, "little"))
    with pytest.raises(RecordIOError, match="invalid part flag 2"):
        recordio.MXRecordIO(tmp_path / "f.rec", "r").read()


def test_record_size_limit(tmp_path):
    rec = recordio.MXRecordIO(tmp_path / "big.rec", "w")
    too_big = np.zeros(2**29, dtype=np.uint8)            # calloc'd: no pages touched
    with pytest.raises(ValueError, match="at most 536870911 bytes, got 536870912"):
        rec.write(too_big)
    rec.close()
    assert os.path.getsize(tmp_path / "big.rec") == 0


def test_unpack_errors():
    with pytest.raises(RecordFormatError, match="10 bytes is shorter than the 24-byte"):
        recordio.unpack(b"x" * 10)
    short = recordio.pack((0, [1.0, 2.0], 1, 0), b"")[:-4]
    with pytest.raises(RecordFormatError, match="flag 2 announces 2 float32 labels"):
        recordio.unpack(short)
    with pytest.raises(RecordFormatError, match="does not fit"):
        recordio.pack((0, 1.0, -1, 0), b"")


def test_image_errors():
    with pytest.raises(RecordFormatError, match="are not an image OpenCV can decode"):
        recordio.unpack_img(recordio.pack((0, 1, 2, 0), b"not an image"))
    with pytest.raises(RecordFormatError, match="cannot encode an image of shape"):
        recordio.pack_img((0, 1, 2, 0), np.zeros((4, 4, 7), np.float64))


def test_image_functions_name_opencv_when_missing():
    script = ("import sys; sys.modules['cv2'] = None\n"
              "from mx_io import recordio\n"
              "h, s = recordio.unpack(recordio.pack((0, 1.0, 2, 0), b'ok'))\n"
              "assert s == b'ok'\n"
              "try:\n"
              "    recordio.unpack_img(recordio.pack((0, 1.0, 2, 0), b'ok'))\n"
              "except ImportError as e:\n"
              "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert "pip install opencv-python-headless" in out.stdout, out.stderr



def test_threads_sharing_a_reader_get_records_or_a_clear_error(tmp_path):
    """The GIL is dropped while reading: a second thread entering the same
    reader gets an error, never a torn chunk or a crash."""
    import threading
    path = tmp_path / "many.rec"
    writer = recordio.MXRecordIO(path, "w")
    payloads = [bytes([i % 251]) * (i % 3000) for i in range(3000)]
    for p in payloads:
        writer.write(p)
    writer.close()
    reader = RecordReader(path, 4096)
    got, errors = [], []

    def pull():
        while True:
            try:
                item = reader.read()
            except RecordIOError as err:
                assert "another thread reads this file" in str(err)
                errors.append(err)
                continue
            if item is None:
                return
            got.append(item)
    threads = [threading.Thread(target=pull) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == sorted(payloads)
