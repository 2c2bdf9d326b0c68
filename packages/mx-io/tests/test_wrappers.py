"""ResizeIter and PrefetchingIter: MXNet 1.9.1's behaviour, errors raised
in next() rather than hangs, threads that end with their iterator."""
import gc
import threading
import time

import numpy as np
import pytest

from mx_io.io import DataIter, NDArrayIter, PrefetchingIter, ResizeIter


def rows(it):
    return [b.data[0].asnumpy()[:, 0].tolist() for b in it]


def test_resize_iter_wraps_and_cuts():
    base = NDArrayIter(np.arange(10, dtype=np.float32).reshape(10, 1), batch_size=4,
                       last_batch_handle="discard")
    it = ResizeIter(base, 5)
    assert it.provide_data == base.provide_data and it.batch_size == 4
    assert rows(it) == [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]
    it.reset()
    assert len(rows(it)) == 5
    it = ResizeIter(NDArrayIter(np.arange(12.0).reshape(12, 1), batch_size=4), 2,
                    reset_internal=False)
    assert rows(it) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    assert rows(it) == [[8, 9, 10, 11], [0, 1, 2, 3]]


def test_prefetching_iter_joins_and_renames():
    a = NDArrayIter({"data": np.arange(8.0).reshape(8, 1)}, np.arange(8.0), batch_size=3)
    b = NDArrayIter({"data": -np.arange(8.0).reshape(8, 1)}, batch_size=3)
    it = PrefetchingIter([a, b], rename_data=[{"data": "d1"}, {"data": "d2"}])
    assert [(d.name, d.shape) for d in it.provide_data] == [("d1", (3, 1)), ("d2", (3, 1))]
    assert [d.name for d in it.provide_label] == ["softmax_label"]
    assert it.batch_size == 3
    for epoch in range(2):
        got = list(it)
        assert [b.pad for b in got] == [0, 0, 1]
        for batch in got:
            assert len(batch.data) == 2 and len(batch.label) == 1
            np.testing.assert_array_equal(batch.data[0].asnumpy(), -batch.data[1].asnumpy())
        assert got[2].data[0].asnumpy()[:, 0].tolist() == [6, 7, 0]
        it.reset()
    it.close()


class Failing(DataIter):
    def __init__(self, fail_at):
        super().__init__(2)
        self.n = 0
        self.fail_at = fail_at
        self.provide_data = [("data", (2,))]
        self.provide_label = []

    def next(self):
        self.n += 1
        if self.n == self.fail_at:
            raise ValueError("broken record 7")
        return NDArrayIter(np.zeros((2, 1)), batch_size=2).next()

    def reset(self):
        self.n = 0


def test_prefetching_error_surfaces_in_next():
    it = PrefetchingIter(Failing(fail_at=2))
    it.next()
    with pytest.raises(ValueError, match="broken record 7"):
        it.next()
    with pytest.raises(ValueError, match="broken record 7"):      # not a hang either
        it.next()
    it.reset()
    it.next()
    it.close()


def test_prefetching_mismatched_lengths():
    a = NDArrayIter(np.zeros((4, 1)), batch_size=2)
    b = NDArrayIter(np.zeros((6, 1)), batch_size=2)
    it = PrefetchingIter([a, b])
    it.next(), it.next()
    with pytest.raises(ValueError, match="different numbers of batches"):
        it.next()
    it.close()


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("PrefetchingIter")]


def test_threads_stop_on_close_and_gc():
    before = len(_prefetch_threads())
    it = PrefetchingIter([NDArrayIter(np.zeros((4, 1)), batch_size=2) for _ in range(2)])
    assert len(_prefetch_threads()) == before + 2
    it.close()
    assert len(_prefetch_threads()) == before
    it = PrefetchingIter(NDArrayIter(np.zeros((4, 1)), batch_size=2))
    it.next()
    del it
    gc.collect()
    deadline = time.monotonic() + 5
    while len(_prefetch_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_prefetch_threads()) == before
