"""Corrupt .params files: dims that would make NumPy shape an absurd array,
and a mutation fuzzer over MXNet-written files (fuzz_params.py)."""
import pathlib
import re
import struct

import pytest

import mx_ndarray as nd
from mx_engine import MXNetError
from mx_ndarray.serialization import NDArrayFormatError
from mx_ops.fuzzing import run_fuzzer

HERE = pathlib.Path(__file__).parent


def one_record(dims, magic=0xF993FAC9, flag=0):
    """A one-array file whose record has ``dims`` and no data after them."""
    head = struct.pack("<QQQ", 0x112, 0, 1)
    if magic is None:         # legacy: uint32 ndim, uint32 dims
        rec = struct.pack(f"<I{len(dims)}I", len(dims), *dims)
    elif magic == 0xF993FAC8:   # V1: no storage type
        rec = struct.pack(f"<Ii{len(dims)}q", magic, len(dims), *dims)
    else:
        rec = struct.pack(f"<IiI{len(dims)}q", magic, 0, len(dims), *dims)
    return head + rec + struct.pack("<iii", 1, 0, flag) + struct.pack("<Q", 0)


# The two mutants of issue 12 reached NumPy's "array is too big": a zero-size
# array whose other dims (times the item size) overflow int64.
@pytest.mark.parametrize("dims, magic, at, why", [
    ((2 ** 62, 2 ** 62, 0), 0xF993FAC9, 36, r"multiply to \d+ \(2\*\*124\) elements"),
    ((2 ** 63 - 1, 0), 0xF993FAC9, 36, r"would take \d+ \(about 2\*\*64\) bytes"),
    ((2 ** 31, 2 ** 31, 4, 0), 0xF993FACA, 36, r"multiply to \d+ \(2\*\*64\) elements"),
    ((2 ** 40, 2 ** 40, 0), 0xF993FAC8, 32, r"multiply to \d+ \(2\*\*80\) elements"),
    ((2 ** 32 - 1, 2 ** 32 - 1, 0), None, 28, r"multiply to \d+ \(about 2\*\*63\) elements"),
])
def test_zero_size_arrays_with_absurd_dims_name_file_and_offset(tmp_path, dims, magic, at, why):
    buf = one_record(dims, magic)
    path = tmp_path / "bad.params"
    path.write_bytes(buf)
    for source, call in ((str(path), lambda: nd.load(str(path))),
                         ("<buffer>", lambda: nd.load_frombuffer(buf))):
        with pytest.raises(NDArrayFormatError) as info:
            call()
        err = info.value
        assert isinstance(err, MXNetError) and isinstance(err, ValueError)
        assert (err.source, err.offset) == (source, at)
        assert str(err).startswith(f"{source}: offset {at}: array 0 has shape {dims}: ")
        assert "more than int64's limit 9223372036854775807" in str(err)
        assert re.search(why, str(err)), str(err)


def test_zero_size_arrays_within_the_limits_still_load():
    loaded = nd.load_frombuffer(one_record((2 ** 40, 2 ** 20, 0)))
    assert loaded[0].shape == (2 ** 40, 2 ** 20, 0) and loaded[0].asnumpy().size == 0


def test_huge_data_is_checked_against_the_bytes_left_before_allocating():
    # 2**49 float32 elements: 2 PiB, refused from the size alone.
    with pytest.raises(NDArrayFormatError, match=r"^<buffer>: offset 36: array 0 has shape "
                                                 r"\(562949953421312,\): it needs"):
        nd.load_frombuffer(one_record((2 ** 49,)))
    # 2**30 float32 elements (4 GiB) pass that check and meet the bytes left.
    with pytest.raises(NDArrayFormatError, match=r"offset 56: expected the float32 data of "
                                                 r"array 0 .* but only 8 bytes remain"):
        nd.load_frombuffer(one_record((2 ** 30,)))


@pytest.mark.timeout(120)
def test_every_mutant_loads_or_names_file_and_offset():
    result = run_fuzzer(HERE / "fuzz_params.py", seed=12, count=150, timeout=100)
    assert result["bad"] == []
    # The mutants really exercise both outcomes.
    assert result["loaded"] > 100 and result["refused"] > 1000


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_many_more_mutants():
    result = run_fuzzer(HERE / "fuzz_params.py", seed=1000, count=3000, timeout=850)
    assert result["bad"] == []
