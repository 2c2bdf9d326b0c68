"""A worker's side of a shared-memory transfer (no MPI): several workers'
ShmTransfer objects over one segment, the test playing the server's part
(the tokens it sends, in the orders it may send them): each worker copies
in only the chunks it does not own, each owner sums its chunks in worker
order into the spare (and its pushpull output), everyone else copies them
out, and the read guard is released once per answered read."""
import numpy as np
import pytest

from mx_kvstore import _dist_shm as shm
from mx_kvstore import _dist_wire as wire
from mx_kvstore._dist_shm_transfer import ShmTransfer

LIMIT_S = 0.05
KEY = 5


def _values(n, dtype, workers, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [rng.standard_normal(n).astype(dtype) for _ in range(workers)]
    return [rng.integers(-2**30, 2**30, n).astype(dtype) for _ in range(workers)]


def _round(seg, srcs, outs, reduce, early, order):
    """One pushpull round of every worker; the server's answer tokens in
    chunk ``order``.  Returns each worker's transfer."""
    workers = len(srcs)
    ts = [ShmTransfer(seg, w, KEY, srcs[w], outs[w], reduce, LIMIT_S) for w in range(workers)]
    for t in ts:                        # the engine threads' copies in
        for i in t.fills:
            t.fill(i)
    spare = 1
    for i in order:
        own = shm.owner(KEY, i, workers) if reduce else None
        if reduce:                      # every slot holds chunk i: its owner sums it
            kind = wire.REDUCE_OUT if early else wire.REDUCE
            assert ts[own].on_token(wire.answer_token(kind, spare, i)) == i
        else:                           # the server's own sum (the reference)
            lo, hi = [(a // srcs[0].itemsize, b // srcs[0].itemsize)
                      for a, b in wire.chunks(srcs[0].nbytes)][i]
            total = seg.value(spare, srcs[0].dtype)
            total[lo:hi] = seg.slot(0, srcs[0].dtype)[lo:hi]
            for w in range(1, workers):
                total[lo:hi] += seg.slot(w, srcs[0].dtype)[lo:hi]
        if early:
            if i == 0:
                for w in range(workers):
                    seg.note_read(w, spare)
            for w in range(workers):
                kind = wire.SKIP if w == own else wire.COPY
                assert ts[w].on_token(wire.answer_token(kind, spare, i)) is None
    if not early:                       # answered at the round's end, from the spare
        for w in range(workers):
            seg.note_read(w, spare)
            for i in range(len(wire.chunks(srcs[0].nbytes))):
                ts[w].on_token(wire.answer_token(wire.COPY, spare, i))
    for w in range(workers):
        seg.consume(w)
    return ts


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32"])
@pytest.mark.parametrize("reduce, early", [(True, True), (True, False), (False, True)])
def test_owners_sum_in_worker_order_and_everyone_gets_the_sum(workers, dtype, reduce, early):
    n = 2 * (wire.CHUNK_BYTES // np.dtype(dtype).itemsize) + 1001    # three chunks
    seg = shm.Segment.create(n * np.dtype(dtype).itemsize, workers)
    try:
        chunks = len(wire.chunks(n * np.dtype(dtype).itemsize))
        for round_ in range(2):
            srcs = _values(n, dtype, workers, round_)
            outs = [np.full(n, -1, dtype) for _ in range(workers)]
            # early answers come as chunks are summed: owners may finish out of order
            order = list(range(chunks))[::-1] if round_ else list(range(chunks))
            ts = _round(seg, srcs, outs, reduce, early, order)
            expected = srcs[0].copy()
            for s in srcs[1:]:
                expected += s                   # worker order, in the dtype
            for w in range(workers):
                np.testing.assert_array_equal(outs[w], expected)
            np.testing.assert_array_equal(seg.value(1, dtype), expected)
            owned = sum(t.owned for t in ts)
            assert owned == (chunks if reduce else 0)
            # a worker's slot holds exactly the chunks it does not own
            if reduce and workers > 1:
                spans = [(a // np.dtype(dtype).itemsize, b // np.dtype(dtype).itemsize)
                         for a, b in wire.chunks(n * np.dtype(dtype).itemsize)]
                for w, t in enumerate(ts):
                    for i, (lo, hi) in enumerate(spans):
                        copied = np.array_equal(seg.slot(w, dtype)[lo:hi], srcs[w][lo:hi])
                        assert copied == (i in t.fills)
            # every worker finished reading the spare: the server may write it
            assert seg.readers_done(1)
            seg.wait_readers(1, LIMIT_S)
    finally:
        seg.close_fd()


def test_a_push_owner_sums_into_the_spare_only_and_waits_for_no_read():
    seg = shm.Segment.create(4 * 100, 2)
    srcs = _values(100, "float32", 2, 0)
    ts = [ShmTransfer(seg, w, KEY, srcs[w], None, True, LIMIT_S) for w in range(2)]
    own = shm.owner(KEY, 0, 2)
    assert ts[own].answers == 1 and ts[1 - own].answers == 0
    assert ts[own].fills == [] and ts[1 - own].fills == [0]
    ts[1 - own].fill(0)
    assert ts[own].on_token(wire.answer_token(wire.REDUCE, 0, 0)) == 0
    np.testing.assert_array_equal(seg.value(0, np.float32), srcs[0] + srcs[1])
    assert int(ts[own].tokens[0]) == wire.SUMMED | 0
    assert seg.read_done.tolist() == [[0, 0], [0, 0]]
    seg.close_fd()


@pytest.mark.parametrize("token, message", [
    (wire.answer_token(wire.COPY, 0, 3), "unexpected answer token"),        # no chunk 3
    (wire.answer_token(wire.REDUCE, 0, 0), "unexpected answer token")])     # not its chunk
def test_an_answer_token_the_transfer_cannot_carry_out_is_refused(token, message):
    seg = shm.Segment.create(4 * 100, 2)
    own = shm.owner(KEY, 0, 2)
    pull = ShmTransfer(seg, 1 - own, KEY, np.ones(100, np.float32), np.zeros(100, np.float32),
                       True, LIMIT_S)
    with pytest.raises(RuntimeError, match=message):
        pull.on_token(token)
    seg.close_fd()


def test_a_push_waits_for_its_previous_push_to_be_summed():
    seg = shm.Segment.create(4 * 100, 2)
    ShmTransfer(seg, 0, KEY, np.ones(100, np.float32), None, True, LIMIT_S)
    with pytest.raises(TimeoutError, match="did not sum worker 0's push 1"):
        ShmTransfer(seg, 0, KEY, np.ones(100, np.float32), None, True, LIMIT_S)
    seg.close_fd()


def test_owners_rotate_with_the_key_and_the_chunk():
    assert [shm.owner(k, c, 3) for k, c in [(0, 0), (0, 1), (1, 0), (2, 2), (4, 0)]] \
        == [0, 1, 1, 1, 1]


@pytest.mark.parametrize("name, function", [("MXNET_KVSTORE_SHM_MIN_BYTES", shm.min_bytes),
                                            ("MXNET_KVSTORE_SHM_REDUCE_BYTES",
                                             shm.reduce_bytes)])
def test_size_bounds_come_from_the_environment(monkeypatch, name, function):
    monkeypatch.delenv(name, raising=False)
    assert function() == 4 << 20
    monkeypatch.setenv(name, "0")
    assert function() == 0
    monkeypatch.setenv(name, "-1")
    with pytest.raises(Exception, match=f"{name}=-1: must be >= 0"):
        function()
