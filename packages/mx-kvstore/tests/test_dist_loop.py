"""The transport Loop with requests that a wait elsewhere completed: mpi4py
sets them to MPI_REQUEST_NULL, which Testsome never reports.  A server whose
``_wait_sends`` completed an answer's send the loop also held ended its job
with ``MPI_Cancel``'s "Null MPI_Request" (exit status 1, the workers then
waited in MPI_Finalize until the launcher's grace ran out)."""
import pytest

MPI = pytest.importorskip("mpi4py.MPI")

from mx_kvstore._dist_transport import Loop  # noqa: E402


def _sent_and_received(loop, done):
    comm = MPI.COMM_SELF
    inbox = bytearray(4)
    recv = comm.Irecv([inbox, MPI.BYTE], source=0, tag=7)
    send = comm.Isend([b"ping", MPI.BYTE], dest=0, tag=7)
    loop.add(send, lambda: done.append("send"))
    loop.add(recv, lambda: done.append("recv"))
    return [send, recv]


def test_requests_completed_elsewhere_run_their_callbacks_and_leave_the_loop():
    loop, done = Loop(MPI, MPI.COMM_SELF, tick=0.01), []
    reqs = _sent_and_received(loop, done)
    while not MPI.Request.Testall(reqs):     # as the server's _wait_sends
        pass
    assert not any(reqs)                     # now MPI_REQUEST_NULL
    assert MPI.Request.Testsome(loop._reqs) is None     # never reported
    loop.drop_completed()
    assert sorted(done) == ["recv", "send"] and loop._reqs == [] and loop._callbacks == []


def test_cancel_at_the_end_skips_requests_completed_elsewhere():
    loop, done = Loop(MPI, MPI.COMM_SELF, tick=0.01), []
    reqs = _sent_and_received(loop, done)
    while not MPI.Request.Testall(reqs):
        pass
    pending = MPI.COMM_SELF.Irecv([bytearray(4), MPI.BYTE], source=0, tag=8)  # never sent
    loop.add(pending, lambda: None)
    loop.cancel_pending(wait_s=1.0)          # raised "Null MPI_Request" before
    assert loop._reqs == [] and not pending
