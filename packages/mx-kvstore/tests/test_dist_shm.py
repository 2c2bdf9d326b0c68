"""dist_sync's shared-memory segment and its two guards (no MPI job): a
worker's slot is written again only after the server summed it, a value
buffer only after every worker answered from it finished copying."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mx_engine.base import MXNetError
from mx_kvstore import _dist_shm as shm

LIMIT_S = 0.05


def test_a_second_process_maps_the_same_memory_through_the_descriptor():
    seg = shm.Segment.create(4 * 1000, 2)
    try:
        seg.value(1, np.float32)[:] = np.arange(1000)
        code = (f"import numpy as np; from mx_kvstore._dist_shm import Segment\n"
                f"s = Segment.attach({os.getpid()}, {seg.fd}, 4000, 2, {int(seg.nonce[0])})\n"
                f"assert (s.value(1, np.float32) == np.arange(1000)).all()\n"
                f"s.slot(1, np.float32)[:] = 7; s.finish_read(1, 1)")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        assert (seg.slot(1, np.float32) == 7).all() and (seg.slot(0) == 0).all()
        assert seg.read_done.tolist() == [[0, 0], [0, 1]]
    finally:
        seg.close_fd()


# another size, or another nonce (a descriptor of some other process)
@pytest.mark.parametrize("nbytes, flip, message", [(8192, 0, r"is not the key.s segment \(size"),
                                                   (64, 1, "another process's descriptor")])
def test_attach_refuses_a_descriptor_that_is_not_the_servers_segment(nbytes, flip, message):
    seg = shm.Segment.create(64, 2)
    try:
        with pytest.raises(OSError, match=message):
            shm.Segment.attach(os.getpid(), seg.fd, nbytes, 2, int(seg.nonce[0]) ^ flip)
    finally:
        seg.close_fd()


def test_buffers_do_not_overlap_and_are_page_aligned():
    seg = shm.Segment.create(5000, 3)
    views = [seg.value(0), seg.value(1)] + [seg.slot(w) for w in range(3)]
    starts = sorted(v.ctypes.data for v in views)
    assert all(b - a >= 5000 for a, b in zip(starts, starts[1:]))
    assert all(s % 4096 == 0 for s in starts)
    assert [seg.index(seg.value(b, np.float32)) for b in (0, 1)] == [0, 1]
    with pytest.raises(ValueError, match="not one of the key's values"):
        seg.index(seg.slot(0))
    seg.close_fd()


def test_a_slot_is_not_claimed_again_before_the_server_summed_it():
    seg = shm.Segment.create(16, 2)
    seg.claim_slot(0, LIMIT_S)
    with pytest.raises(TimeoutError, match="did not sum worker 0's push 1"):
        seg.claim_slot(0, LIMIT_S)
    seg.claim_slot(1, LIMIT_S)          # the other worker's slot is its own
    seg.consume(0)
    seg.claim_slot(0, LIMIT_S)
    seg.close_fd()


def test_a_value_buffer_is_not_written_while_a_worker_copies_it_out():
    seg = shm.Segment.create(16, 2)
    seg.note_read(1, 0)
    assert seg.readers_done(1) and not seg.readers_done(0)
    with pytest.raises(TimeoutError, match="copying value buffer 0"):
        seg.wait_readers(0, LIMIT_S)
    seg.finish_read(1, 0)
    seg.wait_readers(0, LIMIT_S)
    seg.close_fd()


@pytest.mark.parametrize("value, ok", [("0", False), ("1", True), ("", True)])
def test_environment_switch(monkeypatch, value, ok):
    monkeypatch.setenv("MXNET_KVSTORE_SHM", value)
    assert shm.enabled() is ok


def test_bad_environment_switch_is_named(monkeypatch):
    monkeypatch.setenv("MXNET_KVSTORE_SHM", "yes")
    with pytest.raises(MXNetError, match="MXNET_KVSTORE_SHM='yes'"):
        shm.enabled()


class GuardedRounds(RuleBasedStateMachine):
    """Any interleaving of 2 workers' pushes and reads with the server's
    sums and answers: the guards say free exactly when no copy is in
    flight on the slot or buffer (the model's record of copies)."""

    def __init__(self):
        super().__init__()
        self.seg = shm.Segment.create(8, 2)
        self.unsummed = [0, 0]          # pushes a worker wrote, not summed yet
        self.copying = {}               # (worker, buffer) -> reads answered, not copied yet

    def teardown(self):
        self.seg.close_fd()

    @rule(w=st.integers(0, 1))
    def worker_pushes(self, w):
        free = int(self.seg.consumed[w]) >= self.seg.pushed[w]
        assert free == (self.unsummed[w] == 0)
        if free:
            self.seg.claim_slot(w, LIMIT_S)
            self.unsummed[w] += 1

    @precondition(lambda self: any(self.unsummed))
    @rule(w=st.integers(0, 1))
    def server_sums(self, w):
        if self.unsummed[w]:
            self.seg.consume(w)
            self.unsummed[w] -= 1

    @rule(w=st.integers(0, 1), b=st.integers(0, 1))
    def server_answers(self, w, b):
        self.seg.note_read(w, b)
        self.copying[(w, b)] = self.copying.get((w, b), 0) + 1

    @rule(w=st.integers(0, 1), b=st.integers(0, 1))
    def worker_copied(self, w, b):
        if self.copying.get((w, b)):
            self.seg.finish_read(w, b)
            self.copying[(w, b)] -= 1

    @invariant()
    def buffer_free_iff_no_copy_in_flight(self):
        for b in (0, 1):
            busy = any(n for (w, bb), n in self.copying.items() if bb == b)
            assert self.seg.readers_done(b) == (not busy)


GuardedRounds.TestCase.settings = settings(max_examples=60, stateful_step_count=30,
                                           deadline=None)
test_guarded_rounds = GuardedRounds.TestCase
