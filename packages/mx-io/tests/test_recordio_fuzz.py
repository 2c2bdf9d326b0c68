"""Fuzzing mx_io's RecordIO: random payloads against an independent Python
model of dmlc-core's format, and mutated copies of MXNet-written files
(bytes flipped, cut, inserted, removed): every read yields a record or a
RecordIOError naming the file and offset, never anything else."""
import os
import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mx_io import recordio
from mx_io._recordio import RecordReader, RecordWriter
from mx_io.errors import RecordFormatError, RecordIOError

DATA = os.path.join(os.path.dirname(__file__), "data")
MAGIC = struct.pack("<I", 0xCED7230A)
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def model_encode(payload):
    """dmlc-core's RecordIOWriter::WriteRecord, written from its spec."""
    parts, start = [], 0
    for i in range(0, len(payload) - len(payload) % 4, 4):
        if payload[i:i + 4] == MAGIC:
            parts.append(payload[start:i])
            start = i + 4
    parts.append(payload[start:])
    out = b""
    for k, part in enumerate(parts):
        if len(parts) == 1:
            flag = 0
        else:
            flag = 1 if k == 0 else (3 if k == len(parts) - 1 else 2)
        out += MAGIC + struct.pack("<I", flag << 29 | len(part)) + part
        if k == len(parts) - 1:
            out += b"\0" * (-len(payload) % 4)
    return out


# Payloads rich in magic numbers at every alignment.
chunks = st.one_of(st.binary(max_size=9), st.just(MAGIC), st.just(MAGIC[:2]),
                   st.just(MAGIC[2:]))
payloads = st.lists(chunks, max_size=8).map(b"".join)


@FUZZ
@given(records=st.lists(payloads, max_size=12), chunk=st.integers(16, 80))
def test_roundtrip_matches_model(tmp_path_factory, records, chunk):
    path = str(tmp_path_factory.mktemp("rt") / "f.rec")
    writer = RecordWriter(path, chunk)
    for r in records:
        writer.write(r)
    writer.close()
    with open(path, "rb") as f:
        assert f.read() == b"".join(model_encode(r) for r in records)
    reader = RecordReader(path, chunk)
    assert [reader.read() for _ in records] == records
    assert reader.read() is None


def read_everything(path, chunk, limit):
    """Reads ``path`` to its end or its first error; the outcome."""
    reader = RecordReader(path, chunk)
    for _ in range(limit):
        try:
            item = reader.read()
        except RecordIOError as err:
            assert err.path == path and 0 <= err.offset
            assert f"'{path}', byte offset {err.offset}: " in str(err)
            return "error"
        if item is None:
            return "end"
        assert isinstance(item, bytes)
    raise AssertionError(f"more than {limit} records from a {os.path.getsize(path)}-byte file")


mutations = st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert", "delete", "set"]),
                               st.integers(0, 2**31), st.binary(min_size=1, max_size=8)),
                     min_size=1, max_size=4)


def mutate(data, ops):
    data = bytearray(data)
    for op, where, blob in ops:
        at = where % (len(data) + 1)
        if op == "flip" and data:
            data[at % len(data)] ^= 1 << (where % 8)
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = blob
        elif op == "delete":
            del data[at:at + len(blob)]
        elif op == "set" and at + 8 <= len(data):
            # Aim at header words: a valid magic with a random length/flag word.
            data[at & ~3:(at & ~3) + 8] = MAGIC + struct.pack("<I", where)
    return bytes(data)


@FUZZ
@given(name=st.sampled_from(["mxnet_plain.rec", "mxnet_indexed.rec", "mxnet_images.rec"]),
       ops=mutations, chunk=st.sampled_from([16, 64, 1 << 20]))
def test_mutated_mxnet_files(tmp_path_factory, name, ops, chunk):
    with open(os.path.join(DATA, name), "rb") as f:
        data = mutate(f.read(), ops)
    path = str(tmp_path_factory.mktemp("mut") / name)
    with open(path, "wb") as f:
        f.write(data)
    # Every record costs at least 8 bytes of file.
    read_everything(path, chunk, limit=len(data) // 8 + 2)


@FUZZ
@given(offset=st.integers(0, 400))
def test_seek_anywhere(offset):
    path = os.path.join(DATA, "mxnet_indexed.rec")
    reader = RecordReader(path)
    try:
        reader.seek(offset)
        item = reader.read()
    except RecordIOError as err:
        assert err.path == path
    else:
        assert item is None or isinstance(item, bytes)


@FUZZ
@given(blob=st.binary(max_size=64))
def test_unpack_any_bytes(blob):
    try:
        header, rest = recordio.unpack(blob)
    except RecordFormatError:
        return
    assert len(rest) <= len(blob) - 24


@FUZZ
@given(ops=mutations)
def test_unpack_img_of_mutated_images(ops):
    reader = recordio.MXRecordIO(os.path.join(DATA, "mxnet_images.rec"), "r")
    packed = mutate(reader.read(), ops)
    try:
        _, img = recordio.unpack_img(packed)
    except RecordFormatError:
        return
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8


@FUZZ
@given(text=st.text(alphabet="0123456789\t\n -xa", max_size=60))
def test_any_index_text_loads_or_names_its_line(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("idx")
    with open(folder / "a.idx", "w") as f:
        f.write(text)
    with open(folder / "a.rec", "wb") as f:
        f.write(open(os.path.join(DATA, "mxnet_indexed.rec"), "rb").read())
    try:
        rec = recordio.MXIndexedRecordIO(folder / "a.idx", folder / "a.rec", "r")
    except RecordFormatError as err:
        assert "of index" in str(err) and "line" in str(err)
        return
    for key in rec.keys:
        try:
            item = rec.read_idx(key)
        except RecordIOError:
            continue
        assert item is None or isinstance(item, bytes)
