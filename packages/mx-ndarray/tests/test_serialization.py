"""mx.nd.save / mx.nd.load in MXNet 1.x's binary NDArray-list format."""
import importlib.util
import json
import os
import pathlib
import re
import struct
import subprocess

import numpy as np
import pytest

import mx_ndarray as nd
from mx_engine import MXNetError, cpu
from mx_ndarray import serialization
from mx_ndarray.serialization import NDArrayFormatError

DATA = pathlib.Path(__file__).parent / "data"
# MXNet 1.9.1's interpreter for the cross-check (the reference venv that
# ../shared/tools/reference-venvs.sh builds); the test skips without it.
MXNET_PYTHON = os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python")

_spec = importlib.util.spec_from_file_location("make_mxnet_reference",
                                               DATA / "make_mxnet_reference.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
FLAGS = {name: flag for flag, name in enumerate(DTYPES)}
SHAPES = [(), (0,), (3, 0), (5,), (2, 3), (2, 3, 4), (1, 2, 3, 2), (2, 1, 2, 1, 3)]

V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA


# -- hand-built layouts ------------------------------------------------------

def header(n):
    return struct.pack("<QQQ", 0x112, 0, n)


def record(values, magic=V2, ctx=(1, 0), stype=0):
    values = np.asarray(values)
    flag = FLAGS[values.dtype.name]
    return (struct.pack(f"<Iii{values.ndim}q", magic, stype, values.ndim, *values.shape)
            + struct.pack("<iii", *ctx, flag) + values.astype(values.dtype.newbyteorder("<"))
            .tobytes())


def names(*keys):
    out = struct.pack("<Q", len(keys))
    for k in keys:
        raw = k.encode("utf-8")
        out += struct.pack("<Q", len(raw)) + raw
    return out


def saved_bytes(tmp_path, data, **kw):
    path = tmp_path / "out.params"
    nd.save(str(path), data, **kw)
    return path.read_bytes()


def assert_same(loaded, expected):
    assert isinstance(loaded, nd.NDArray)
    host = loaded.asnumpy()
    assert host.dtype == expected.dtype and host.shape == expected.shape
    np.testing.assert_array_equal(host, expected)


# -- round trips -------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_round_trip_every_dtype_and_shape(tmp_path, dtype, shape):
    values = ref.reference_values(dtype, shape)
    path = tmp_path / "a.params"
    nd.save(str(path), [nd.array(values, dtype=values.dtype)])
    (out,) = nd.load(str(path))
    assert_same(out, values)
    assert out.context == cpu(0)
    # and the same through load_frombuffer
    (out,) = nd.load_frombuffer(path.read_bytes())
    assert_same(out, values)


def test_list_dict_and_single_forms(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2], dtype=np.int64)
    path = tmp_path / "x.params"
    nd.save(path, {"w": nd.array(a, dtype=a.dtype), "b\u00e4": nd.array(b, dtype=b.dtype)})      # os.PathLike works too
    out = nd.load(path)
    assert isinstance(out, dict) and list(out) == ["w", "b\u00e4"]   # order kept
    assert_same(out["w"], a)
    assert_same(out["b\u00e4"], b)
    nd.save(str(path), [nd.array(a, dtype=a.dtype), nd.array(b, dtype=b.dtype)])
    out = nd.load(str(path))
    assert isinstance(out, list) and len(out) == 2
    assert_same(out[0], a)
    assert_same(out[1], b)
    nd.save(str(path), nd.array(b, dtype=b.dtype))                               # one NDArray: a list of one
    (out,) = nd.load(str(path))
    assert_same(out, b)


def test_empty_list_and_dict(tmp_path):
    assert saved_bytes(tmp_path, []) == header(0) + names()
    assert nd.load(str(tmp_path / "out.params")) == []
    # as in MXNet, an empty dict has no names either, and loads as a list
    assert saved_bytes(tmp_path, {}) == header(0) + names()
    assert nd.load_frombuffer(header(0) + names()) == []


def test_exported_as_mx_nd_functions():
    assert nd.save is serialization.save and nd.load is serialization.load
    assert nd.load_frombuffer is serialization.load_frombuffer
    assert {"save", "load", "load_frombuffer", "NDArrayFormatError"} <= set(nd.__all__)
    assert issubclass(NDArrayFormatError, MXNetError)
    assert issubclass(NDArrayFormatError, ValueError)


# -- byte layout -------------------------------------------------------------

def test_save_matches_hand_built_layout(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, -2], dtype=np.int64)
    expected = (struct.pack("<QQ", 0x112, 0)         # kMXAPINDArrayListMagic, reserved
                + struct.pack("<Q", 2)               # number of arrays
                + struct.pack("<I", 0xF993FAC9)      # NDARRAY_V2_MAGIC
                + struct.pack("<i", 0)               # kDefaultStorage
                + struct.pack("<i", 2) + struct.pack("<2q", 2, 3)   # TShape
                + struct.pack("<ii", 1, 0)           # Context: kCPU, dev_id 0
                + struct.pack("<i", 0)               # kFloat32
                + w.tobytes()
                + struct.pack("<IiI", 0xF993FAC9, 0, 1) + struct.pack("<q", 2)
                + struct.pack("<iii", 1, 0, 6) + struct.pack("<2q", 1, -2)
                + struct.pack("<Q", 2)               # number of names
                + struct.pack("<Q", 1) + b"w" + struct.pack("<Q", 4) + b"bias")
    assert len(expected) == 16 + 8 + 64 + 48 + 8 + 9 + 12
    assert saved_bytes(tmp_path, {"w": nd.array(w, dtype=w.dtype), "bias": nd.array(b, dtype=b.dtype)}) == expected
    out = nd.load_frombuffer(expected)
    assert list(out) == ["w", "bias"]
    assert_same(out["w"], w)
    assert_same(out["bias"], b)


def test_hand_built_records_of_every_dtype_load():
    values = [ref.reference_values(dt, (2, 2)) for dt in DTYPES]
    buf = header(len(values)) + b"".join(record(v) for v in values) + names()
    for out, v in zip(nd.load_frombuffer(buf), values):
        assert_same(out, v)


def test_zero_dim_arrays_are_written_as_v3(tmp_path):
    s = np.array(2.5, dtype=np.float32)
    v = np.array([1, 2], dtype=np.int32)
    expected = header(2) + record(s, V3) + record(v, V3) + names()
    assert saved_bytes(tmp_path, [nd.array(s, dtype=s.dtype), nd.array(v, dtype=v.dtype)]) == expected
    out = nd.load_frombuffer(expected)
    assert_same(out[0], s)
    assert_same(out[1], v)
    # forced either way
    assert saved_bytes(tmp_path, [nd.array(v, dtype=v.dtype)], np_shape=True) == header(1) + record(v, V3) \
        + names()
    assert saved_bytes(tmp_path, [nd.array(v, dtype=v.dtype)], np_shape=False) == header(1) + record(v) \
        + names()
    with pytest.raises(ValueError, match="save: array 'x' has ndim 0.*np_shape=True"):
        nd.save(str(tmp_path / "no.params"), {"x": nd.array(s, dtype=s.dtype)}, np_shape=False)
    assert not (tmp_path / "no.params").exists()


def test_v1_records_load():
    # NDARRAY_V1_MAGIC: no storage type; the TShape is int32 ndim + int64 dims.
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    rec = (struct.pack("<Ii2q", V1, 2, 3, 2) + struct.pack("<iii", 1, 0, 1) + a.tobytes())
    none = struct.pack("<Ii", V1, 0)                  # an uninitialised array: shape only
    (out, empty) = nd.load_frombuffer(header(2) + rec + none + names())
    assert_same(out, a)
    assert empty is None


def test_legacy_records_without_magic_load():
    # Before V1: the first uint32 is ndim, then uint32 dims, no storage type.
    a = np.arange(4, dtype=np.int32).reshape(1, 4)
    rec = struct.pack("<I2I", 2, 1, 4) + struct.pack("<iii", 1, 0, 4) + a.tobytes()
    out = nd.load_frombuffer(header(1) + rec + names("old"))
    assert_same(out["old"], a)


def test_uninitialised_records_load_as_none():
    # MXNet reads a V2 shape of ndim 0, or a V3 shape with an unknown (-1) dim,
    # as NDArray() with nothing after the shape.
    buf = (header(3) + struct.pack("<Iii", V2, 0, 0) + struct.pack("<Iii2q", V3, 0, 2, 4, -1)
           + record(np.ones(2, np.uint8)) + names())
    a, b, c = nd.load_frombuffer(buf)
    assert a is None and b is None
    assert_same(c, np.ones(2, np.uint8))


def test_gpu_and_pinned_records_load_on_cpu_or_ctx():
    a = np.arange(3, dtype=np.float32)
    buf = header(2) + record(a, ctx=(2, 1)) + record(a, ctx=(3, 0)) + names()
    for out in nd.load_frombuffer(buf):
        assert out.context == cpu(0)
        assert_same(out, a)
    for out in nd.load_frombuffer(buf, ctx=cpu(1)):
        assert out.context == cpu(1)
    with pytest.raises(TypeError, match="load_frombuffer: argument 'ctx' must be a Context"):
        nd.load_frombuffer(buf, ctx="gpu")


def test_trailing_bytes_are_ignored_as_in_mxnet():
    a = np.arange(3, dtype=np.int8)
    (out,) = nd.load_frombuffer(header(1) + record(a) + names() + b"\x00junk")
    assert_same(out, a)


def test_load_frombuffer_takes_bytes_likes():
    buf = header(1) + record(np.arange(3, dtype=np.int8)) + names()
    for b in (bytearray(buf), memoryview(buf), np.frombuffer(buf, np.uint8)):
        assert_same(nd.load_frombuffer(b)[0], np.arange(3, dtype=np.int8))
    with pytest.raises(TypeError, match="'buf' must be a C-contiguous bytes-like"):
        nd.load_frombuffer(buf.decode("latin-1"))


# -- errors ------------------------------------------------------------------

def good_file():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    return header(1) + record(a) + names("w"), a


# Offsets in good_file(): 0 list magic, 8 reserved, 16 count, 24 record magic,
# 28 storage type, 32 ndim, 36 dims, 52 dev_type, 56 dev_id, 60 dtype flag,
# 64 data (24 bytes), 88 names count, 96 name length, 104 name; 105 bytes.
@pytest.mark.parametrize("cut, message", [
    (0, "offset 0: expected the NDArray list magic 0x112 \\(uint64\\) \\(8 bytes\\), "
        "but only 0 bytes remain"),
    (5, "offset 0: expected the NDArray list magic .*, but only 5 bytes remain"),
    (12, "offset 8: expected the reserved field \\(uint64\\) \\(8 bytes\\), but only 4 "),
    (16, "offset 16: expected the number of arrays \\(uint64\\) \\(8 bytes\\), but only 0 "),
    (24, "offset 16: the file declares 1 arrays, but only 0 bytes remain \\(each takes at "
         "least 8\\)"),
    (30, "offset 16: the file declares 1 arrays, but only 6 bytes remain"),
    (34, "offset 32: expected the ndim of array 0 \\(4 bytes\\), but only 2 "),
    (44, "offset 36: expected the 2 dims of array 0 \\(16 bytes\\), but only 8 "),
    (52, "offset 52: expected the device type of array 0 \\(int32\\) \\(4 bytes\\), but "
         "only 0 "),
    (58, "offset 56: expected the device id of array 0 \\(int32\\) \\(4 bytes\\), but only 2 "),
    (60, "offset 60: expected the dtype flag of array 0 \\(int32\\) \\(4 bytes\\), but only 0 "),
    (70, "offset 64: expected the float32 data of array 0 with shape \\(2, 3\\) \\(24 bytes\\), "
         "but only 6 "),
    (88, "offset 88: expected the number of names \\(uint64\\) \\(8 bytes\\), but only 0 "),
    (100, "offset 88: the file declares 1 names, but only 4 bytes remain"),
    (104, "offset 104: expected name 0 \\(1 bytes\\), but only 0 bytes remain"),
])
def test_truncated_files_name_the_offset(tmp_path, cut, message):
    buf, _ = good_file()
    path = tmp_path / "model.params"
    path.write_bytes(buf[:cut])
    with pytest.raises(NDArrayFormatError, match=f"^{re.escape(str(path))}: {message}"):
        nd.load(str(path))
    with pytest.raises(NDArrayFormatError, match=f"^<buffer>: {message}"):
        nd.load_frombuffer(buf[:cut])


def test_every_truncation_raises_a_format_error():
    buf, a = good_file()
    assert_same(nd.load_frombuffer(buf)["w"], a)
    for cut in range(len(buf)):
        with pytest.raises(NDArrayFormatError) as info:
            nd.load_frombuffer(buf[:cut])
        assert isinstance(info.value, ValueError) and isinstance(info.value, MXNetError)
        assert 0 <= info.value.offset <= cut and info.value.source == "<buffer>"


def patched(offset, fmt, value):
    buf = bytearray(good_file()[0])
    struct.pack_into(fmt, buf, offset, value)
    return bytes(buf)


@pytest.mark.parametrize("offset, fmt, value, message", [
    (0, "<Q", 0x113, "offset 0: expected NDArray list magic 0x112, got 0x113"),
    (16, "<Q", 2**60, "offset 16: the file declares 1152921504606846976 arrays, but only"),
    (24, "<I", 0, "offset 24: expected NDArray magic 0xf993fac9 .* for array 0, got 0x00000000"),
    (24, "<I", 0xF993FACB, "offset 24: expected NDArray magic .* got 0xf993facb"),
    # A dense record relabelled sparse: its dims are read as the storage shape,
    # its context as the shape, which cannot fit.
    (28, "<i", 1, "offset 32: array 0 \\(row_sparse\\) has storage shape \\(2, 3\\), which "
                  "does not fit its shape"),
    (28, "<i", 2, "offset 52: array 0 \\(csr\\) has an invalid shape: ndim 1, dims \\(0,\\)"),
    (28, "<i", 9, "offset 28: array 0 has unknown storage type 9"),
    (32, "<i", 1000, "offset 32: array 0 has ndim 1000, more than 32"),
    (32, "<i", -1, "offset 32: array 0 has ndim -1"),
    (36, "<q", -3, "offset 36: array 0 has a negative dim in \\(-3, 3\\)"),
    (36, "<q", 2**40, "offset 64: expected the float32 data of array 0 with shape "
                      "\\(1099511627776, 3\\) \\(13194139533312 bytes\\), but only 41 bytes"),
    (52, "<i", 4, "offset 52: array 0 has device type 4"),
    (60, "<i", 7, "offset 60: array 0 has dtype bool \\(flag 7\\), which is not supported"),
    (60, "<i", 12, "offset 60: array 0 has dtype bfloat16 \\(flag 12\\)"),
    (60, "<i", 99, "offset 60: array 0 has unknown dtype flag 99"),
    (88, "<Q", 2, "offset 88: the file declares 2 names, but only 9 bytes remain"),
    (88, "<Q", 3, "offset 88: the file declares 3 names, but only"),
    (96, "<Q", 2**62, "offset 104: expected name 0 \\(4611686018427387904 bytes\\), "
                      "but only 1 bytes"),
    (104, "<B", 0xFF, "offset 104: name 0 is not UTF-8"),
])
def test_corrupt_fields_name_the_offset(offset, fmt, value, message):
    with pytest.raises(NDArrayFormatError, match=f"^<buffer>: {message}"):
        nd.load_frombuffer(patched(offset, fmt, value))


def test_names_count_must_match():
    buf = header(1) + record(np.ones(1, np.float32)) + names("a", "b")
    with pytest.raises(NDArrayFormatError,
                       match="offset 60: the file has 1 arrays but 2 names, expected 0 or 1"):
        nd.load_frombuffer(buf)


def test_error_offsets_in_later_records():
    first = record(np.ones(3, np.float32))
    buf = header(2) + first + struct.pack("<I", 0xDEADBEEF) + b"\0" * 40
    at = 24 + len(first)
    with pytest.raises(NDArrayFormatError, match=f"offset {at}: .* for array 1, got 0xdeadbeef"):
        nd.load_frombuffer(buf)


def test_real_sparse_file_loads(tmp_path):
    """MXNet 1.9.1's row_sparse record (rows [1] of a 3 x 2 array) loads as
    a sparse array and saves back to the same bytes (tests/data/sparse has
    more)."""
    path = DATA / ref.ROW_SPARSE_FILE
    (a,) = nd.load(str(path))
    assert a.stype == "row_sparse" and a.shape == (3, 2)
    np.testing.assert_array_equal(a.asnumpy(), [[0, 0], [1, 2], [0, 0]])
    out = tmp_path / "rsp.params"
    nd.save(str(out), [a])
    assert out.read_bytes() == path.read_bytes()


def test_bad_arguments(tmp_path):
    x = nd.array(np.ones(2, np.float32))
    f = str(tmp_path / "x.params")
    with pytest.raises(TypeError, match="save: 'data' must be an NDArray, a list of NDArray or"):
        nd.save(f, (x,))
    with pytest.raises(TypeError, match="save: the keys of 'data' must be str, got int 1"):
        nd.save(f, {1: x})
    with pytest.raises(TypeError, match="save: 'data\\['a'\\]' must be an NDArray, got ndarray"):
        nd.save(f, {"a": np.ones(2)})
    with pytest.raises(TypeError, match="save: 'data\\[1\\]' must be an NDArray, got NoneType"):
        nd.save(f, [x, None])
    with pytest.raises(ValueError, match="NUL"):
        nd.save(f, {"a\0b": x})
    with pytest.raises(TypeError, match="save: 'fname' must be a str"):
        nd.save(3, x)
    with pytest.raises(TypeError, match="load: 'fname' must be a str"):
        nd.load(None)
    assert not os.path.exists(f)


# -- files written by MXNet 1.9.1 --------------------------------------------

def expected_contents(fname):
    form, entries = ref.SPEC[fname]
    values = [ref.reference_values(dt, shape) for _, dt, shape in entries]
    if form == "list":
        return values
    return {name: v for (name, _, _), v in zip(entries, values)}


def as_ndarrays(contents):
    if isinstance(contents, dict):
        return {k: nd.array(v, dtype=v.dtype) for k, v in contents.items()}
    return [nd.array(v, dtype=v.dtype) for v in contents]


@pytest.mark.parametrize("fname", sorted(ref.SPEC))
def test_mxnet_reference_files(tmp_path, fname):
    path = DATA / fname
    expected = expected_contents(fname)
    loaded = nd.load(str(path))
    assert type(loaded) is type(expected)
    if isinstance(expected, dict):
        assert list(loaded) == list(expected)
        for k in expected:
            assert_same(loaded[k], expected[k])
    else:
        assert len(loaded) == len(expected)
        for out, v in zip(loaded, expected):
            assert_same(out, v)
    # Saving the same arrays here gives MXNet's bytes exactly.
    np_shape = ref.SPEC[fname][0] == "np"
    assert saved_bytes(tmp_path, as_ndarrays(expected), np_shape=np_shape) == path.read_bytes()


_MXNET_CHECK = r"""
import json, sys
import numpy as np
import mxnet as mx
sys.path.insert(0, sys.argv[1])
import make_mxnet_reference as ref
jobs = json.loads(sys.argv[2])
for ours, fname, theirs in jobs:
    form, entries = ref.SPEC[fname]
    if form == "np":
        mx.npx.set_np()
        loaded = mx.npx.load(ours)
    else:
        loaded = mx.nd.load(ours)
    if form == "list":
        pairs = list(zip(entries, loaded))
    else:
        assert list(loaded) == [e[0] for e in entries], list(loaded)
        pairs = [(e, loaded[e[0]]) for e in entries]
    for (name, dt, shape), arr in pairs:
        host = arr.asnumpy()
        want = ref.reference_values(dt, shape)
        assert host.dtype == want.dtype and host.shape == want.shape, (name, host, want)
        assert np.array_equal(host, want), (name, host, want)
    if form == "np":
        mx.npx.save(theirs, loaded)
        mx.npx.reset_np()
    else:
        mx.nd.save(theirs, loaded)
# hand-built V1, legacy and gpu records, as MXNet reads them, saved back as V2
mx.nd.save(sys.argv[4], mx.nd.load_frombuffer(bytes.fromhex(sys.argv[3])))
print("mxnet-ok")
"""


def old_records():
    """A V1 record, a legacy record without magic and a V2 record from gpu(1)."""
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    b = np.arange(4, dtype=np.int32).reshape(1, 4)
    c = np.ones(2, np.float32)
    buf = (header(3)
           + struct.pack("<Ii2q", V1, 2, 3, 2) + struct.pack("<iii", 1, 0, 1) + a.tobytes()
           + struct.pack("<I2I", 2, 1, 4) + struct.pack("<iii", 1, 0, 4) + b.tobytes()
           + record(c, ctx=(2, 1)) + names())
    return buf, [a, b, c]


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON),
                    reason=f"no MXNet 1.9.1 interpreter at {MXNET_PYTHON} (set MX_MXNET_PYTHON)")
def test_files_written_here_load_in_mxnet(tmp_path):
    jobs = []
    for fname in sorted(ref.SPEC):
        ours = tmp_path / f"ours_{fname}"
        nd.save(str(ours), as_ndarrays(expected_contents(fname)),
                np_shape=ref.SPEC[fname][0] == "np")
        jobs.append((str(ours), fname, str(tmp_path / f"theirs_{fname}")))
    old, old_values = old_records()
    resaved = tmp_path / "old_resaved.params"
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    proc = subprocess.run([MXNET_PYTHON, "-c", _MXNET_CHECK, str(DATA), json.dumps(jobs),
                           old.hex(), str(resaved)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "mxnet-ok" in proc.stdout, proc.stdout + proc.stderr
    for ours, _, theirs in jobs:
        # MXNet reads our file and writes it back byte for byte.
        assert pathlib.Path(theirs).read_bytes() == pathlib.Path(ours).read_bytes()
    # MXNet reads the old records as we do: its V2 re-save is what we write for them.
    ours = nd.load_frombuffer(old)
    for out, v in zip(ours, old_values):
        assert_same(out, v)
    assert saved_bytes(tmp_path, ours) == resaved.read_bytes()


def test_no_pickle_in_the_module():
    source = pathlib.Path(serialization.__file__).read_text()
    assert "import pickle" not in source and "allow_pickle" not in source
