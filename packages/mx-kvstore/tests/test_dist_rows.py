"""The row_sparse pieces of the distributed store that need no MPI job: the
split of a row_sparse key by whole rows, the row messages (round trips and
every malformed size named), the choice of rows per server, the servers'
row sums; KVStoreServer outside a job."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_engine.base import MXNetError
from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_rows as rows
from mx_kvstore.kvstore_server import KVStoreServer, _init_kvstore_server_module


def _mxnet_row_split(total_rows, servers):
    """MXNet 1.9.1's EncodeRowSparseKey: llround(rows / S * i) per server."""
    bounds = [int(math.floor(total_rows / servers * i + 0.5)) for i in range(servers + 1)]
    return list(zip(bounds, bounds[1:]))


@given(st.integers(1, 400), st.integers(1, 7), st.integers(1, 4), st.integers(1, 500))
def test_row_sparse_keys_split_by_whole_rows_as_mxnet(total_rows, row_len, servers, bound):
    parts = keys.partition_rows(5, total_rows, row_len, servers, bound)
    if total_rows * row_len < bound or servers == 1:
        assert parts == keys.partition(5, total_rows * row_len, servers, bound)
        return
    assert [(lo // row_len, hi // row_len) for _, _, lo, hi in parts] == \
        _mxnet_row_split(total_rows, servers)
    assert all(lo % row_len == 0 and hi % row_len == 0 for _, _, lo, hi in parts)
    assert [p[:2] for p in parts] == [p[:2] for p in
                                      keys.partition(5, total_rows * row_len, servers, bound)]


@settings(max_examples=60)
@given(st.integers(1, 6), st.integers(1, 30), st.data(),
       st.sampled_from(["float32", "float64", "int32", "float16"]))
def test_row_messages_round_trip(row_len, total_rows, data, dtype):
    ids = np.array(sorted(data.draw(st.sets(st.integers(0, total_rows - 1)))), np.int64)
    values = np.arange(len(ids) * row_len).astype(dtype).reshape(len(ids), row_len)
    size = total_rows * row_len
    buf = rows.pack(row_len, ids, values)
    assert buf.nbytes <= rows.max_bytes(len(ids), size, np.dtype(dtype).itemsize)
    got_len, got_ids, got_values = rows.unpack(buf, len(ids), dtype, size, True)
    assert got_len == row_len
    np.testing.assert_array_equal(got_ids, ids)
    np.testing.assert_array_equal(got_values, values)
    got_len, got_ids, none = rows.unpack(rows.pack(row_len, ids), len(ids), dtype, size, False)
    assert none is None and got_len == row_len
    np.testing.assert_array_equal(got_ids, ids)


@pytest.mark.parametrize("row_len, ids, count, size, message", [
    (2, [0, 1], 5, 20, "cannot hold 5 row ids"),
    (3, [0, 1], 2, 20, "row length 3 does not divide the slice's 20 elements"),
    (0, [0], 1, 20, "row length 0"),
    (2, [0, 10], 2, 20, "row id 10 is outside 0..9"),
    (2, [-1, 3], 2, 20, "row id -1 is outside 0..9"),
    (2, [4, 4], 2, 20, "not strictly increasing at position 1 \\(4 then 4\\)"),
    (2, [5, 2], 2, 20, "not strictly increasing at position 1 \\(5 then 2\\)"),
])
def test_bad_row_messages_are_named(row_len, ids, count, size, message):
    buf = rows.pack(row_len, np.array(ids, np.int64))
    with pytest.raises(ValueError, match=message):
        rows.unpack(buf, count, "float32", size, False)


def test_a_push_message_of_the_wrong_size_is_named():
    buf = rows.pack(2, np.array([1], np.int64), np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="1 rows of 2 float64 needs 32 bytes, got 24"):
        rows.unpack(buf, 1, "float64", 10, True)


def test_spans_give_each_server_the_rows_of_its_slice():
    parts = keys.partition_rows(1, 10, 3, 2, 1)          # rows 0..5 and 5..10
    ids = np.array([0, 4, 5, 9], np.int64)
    spans = rows.spans(ids, parts, 3)
    assert [(s[2], s[3], s[4]) for s in spans] == [(0, 0, 2), (5, 2, 4)]
    assert [s[:2] for s in spans] == [p[:2] for p in parts]


@given(st.lists(st.tuples(st.sets(st.integers(0, 19)), st.integers(0, 100)), max_size=4))
def test_row_sums_against_dense_numpy(pushes_spec):
    pushes, dense = [], np.zeros((20, 2), np.float64)
    for row_set, seed in pushes_spec:
        ids = np.array(sorted(row_set), np.int64)
        values = np.random.RandomState(seed).randn(len(ids), 2)
        pushes.append((ids, values))
        dense[ids] += values
    ids, summed = rows.sum_rows(pushes, 2, np.float64)
    np.testing.assert_array_equal(ids, np.flatnonzero(
        np.isin(np.arange(20), np.concatenate([p[0] for p in pushes]) if pushes else [])))
    np.testing.assert_allclose(summed, dense[ids], rtol=1e-12)


def test_kvstore_server_outside_a_job_says_how_to_start_one():
    server = KVStoreServer(None)
    with pytest.raises(MXNetError, match="not part of a distributed job.*mx_kvstore.launch"):
        server.run()
    assert _init_kvstore_server_module() is None       # a non-server process goes on
