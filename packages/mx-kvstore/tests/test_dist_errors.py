"""The distributed store's checks that need no MPI job: key placement,
environment values, and a dist store asked for outside a job."""
import numpy as np
import pytest

import mx_kvstore
from mx_engine.base import MXNetError
from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_wire as wire


def test_small_keys_hash_to_one_server_big_ones_split_evenly():
    assert keys.partition(3, 10, 4, 100) == [(3 * 9973 % 4, keys.range_begin(3 * 9973 % 4, 4)
                                              + 3, 0, 10)]
    parts = keys.partition(5, 1001, 3, 100)
    assert [p[0] for p in parts] == [0, 1, 2]
    assert [(p[2], p[3]) for p in parts] == [(0, 334), (334, 667), (667, 1001)]
    for server, skey, _, _ in parts:
        assert keys.decode(skey, server, 3) == 5


def test_key_outside_a_servers_range_is_refused():
    with pytest.raises(ValueError, match="outside 0.."):
        keys.partition(keys.max_key(2) + 1, 10, 2, 100)


@pytest.mark.parametrize("value, message", [("x", "expected an integer >= 1"),
                                            ("0", "must be >= 1 elements")])
def test_bad_bigarray_bound_is_named(monkeypatch, value, message):
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", value)
    with pytest.raises(MXNetError, match="MXNET_KVSTORE_BIGARRAY_BOUND.*" + message):
        keys.bigarray_bound()


def test_chunks_cover_a_buffer_in_order():
    n = 3 * wire.CHUNK_BYTES + 5
    spans = wire.chunks(n)
    assert spans[0][0] == 0 and spans[-1][1] == n and len(spans) == 4
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert wire.chunks(0) == [(0, 0)]
    buf = np.arange(n // 4, dtype=np.float32)
    pieces = wire.post_chunks(lambda piece, tag: (piece.nbytes, tag), buf, 7)
    assert sum(p[0] for p in pieces) == buf.nbytes and {p[1] for p in pieces} == {7}


def test_dist_store_outside_a_job_says_how_to_start_one(monkeypatch):
    for name in ("PMI_RANK", "PMI_FD", "PMI_PORT", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                 "MPI_LOCALRANKID", "HYDI_CONTROL_FD"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MXNetError, match="python -m mx_kvstore.launch -n NUM_WORKERS"):
        mx_kvstore.create("dist_sync")


def test_unknown_dist_type_is_refused():
    from mx_kvstore._dist import KVStoreDist
    with pytest.raises(MXNetError, match="'dist_foo' is not a distributed type"):
        KVStoreDist("dist_foo")
