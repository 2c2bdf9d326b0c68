"""dist_sync's shared-memory data path between a server and the workers on
its host (README.md, "Distributed: shared memory on one host").

A server makes one ``Segment`` per key (a memfd: freed by the kernel when
the last process that maps it ends, killed or not; nothing is left in
/dev/shm).  A worker on the same host opens it once through
``/proc/<server pid>/fd/<fd>`` after the key's init; the server closes its
descriptor at the next completed barrier (the mappings keep the memory).

Layout: a control page, then two value buffers (the stored value and the
spare a sync round sums into; they swap), then one push slot per worker.
A push copies the worker's value into its slot chunk by chunk, each chunk
followed by a token message; the server sums the slots into the spare as
the tokens land.  A pull's answer is a token per chunk naming the value
buffer to copy from; the worker copies out on its transport thread.

Two guards keep the copies apart, each a set of uint64 counters in the
control page written by one side only (aligned 8-byte stores; x86's store
order keeps a counter behind the copy that precedes it):

- ``consumed[w]``: pushes of worker w the server has summed.  The worker
  writes its slot again only when every earlier push was consumed.
- ``read_done[w, b]``: reads of value buffer b worker w has finished.  The
  server counts the reads it answered from each buffer and writes a buffer
  (the next round's sum, the updater) only when every reader finished.

Workers sum (a slice of at least ``MXNET_KVSTORE_SHM_REDUCE_BYTES``, every
worker attached: ``attached[w]``): the server then moves no data.  Chunk i
of the slice belongs to worker ``owner(key, i, W)``; the others copy it into
their slots, the owner sums it straight from its own value and those slots
into the spare (and, for a pushpull answered as the round goes, into its
own output too) when the server's token says every slot holds it, and
tells the server.  A 2-worker pushpull of N bytes then moves 8N bytes
through memory (copies in: N read and N written; the owners' sums: 2N read,
2N written; copies out: N and N) against 11N when the server sums (in: 2N
and 2N; the sum: 2N and N; out: 2N and 2N).  A worker's slot goes unused
for the chunks it owns; the guards stay the same.
"""
import mmap
import os
import time

import numpy as np

from mx_kvstore._dist_mpi import env_int

_PAGE = mmap.PAGESIZE
# a copy's time is all a guard waits for, unless a peer died or hangs
_POLL_MIN_S = 20e-6
_POLL_MAX_S = 200e-6


def enabled():
    """MXNET_KVSTORE_SHM (default 1): 0 keeps every transfer on MPI messages."""
    return env_int("MXNET_KVSTORE_SHM", default=1) != 0


def min_bytes():
    """MXNET_KVSTORE_SHM_MIN_BYTES (default 4 MiB, one transfer chunk): the
    dense slices of at least this many bytes move through shared memory,
    smaller ones as MPI messages (MPICH's own shared memory then copies
    them; below a chunk the tokens and guards cost more than the copies
    they save: 2 MiB pushpulls took 1.03 ms as messages, 1.15-1.30 here)."""
    return env_int("MXNET_KVSTORE_SHM_MIN_BYTES", default=4 << 20)


def reduce_bytes():
    """MXNET_KVSTORE_SHM_REDUCE_BYTES (default 4 MiB): the workers sum the
    shared-memory slices of at least this many bytes, the server the
    smaller ones (a worker-summed chunk takes two more hand-overs: fixed
    cost that only pays where the copies saved are large)."""
    return env_int("MXNET_KVSTORE_SHM_REDUCE_BYTES", default=4 << 20)


def owner(key, chunk, num_workers):
    """The worker that sums ``chunk`` of server key ``key`` in a
    worker-summed round (keys start on different workers, so one-chunk
    keys spread too)."""
    return (int(key) + int(chunk)) % int(num_workers)


def _round_up(n, to):
    return (n + to - 1) // to * to


def wait_until(ready, limit_s, what):
    """Polls ``ready()`` with a growing sleep (no spinning core: the machine
    may have fewer cores than busy processes); TimeoutError naming ``what``
    after ``limit_s`` seconds."""
    if ready():
        return
    deadline = time.monotonic() + limit_s
    pause = _POLL_MIN_S
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"kvstore shared memory: {what} within {limit_s:g} s")
        time.sleep(pause)
        pause = min(_POLL_MAX_S, 2 * pause)


class Segment:
    """One key's shared memory (``nbytes`` per value) for ``num_workers``
    workers, mapped from descriptor ``fd``."""

    def __init__(self, fd, nbytes, num_workers):
        self.fd, self.nbytes, self.num_workers = fd, int(nbytes), int(num_workers)
        control = self._control_bytes(self.num_workers)
        stride = _round_up(max(self.nbytes, 1), _PAGE)
        self.size = self._size(self.nbytes, self.num_workers)
        self._map = mmap.mmap(fd, self.size)
        raw = np.frombuffer(self._map, np.uint8)
        words = raw[:control].view(np.uint64)
        w = self.num_workers
        self.read_done = words[:2 * w].reshape(w, 2)
        self.consumed = words[2 * w:3 * w]
        # a random number the server writes and tells the workers: a worker
        # that opened some other process's descriptor (another PID
        # namespace) finds another number there
        self.nonce = words[3 * w:3 * w + 1]
        # set by each worker that mapped the segment: all set, the workers
        # sum large pushes themselves (read after the barrier that follows)
        self.attached = words[3 * w + 1:4 * w + 1]
        self._parts = [raw[control + i * stride:control + i * stride + self.nbytes]
                       for i in range(2 + w)]
        # the server's side: reads it answered per (worker, buffer)
        self.answered = np.zeros((w, 2), np.uint64)
        # the worker's side: pushes posted into each slot
        self.pushed = [0] * w

    @classmethod
    def create(cls, nbytes, num_workers):
        """A new segment (the server's), zero-filled."""
        fd = os.memfd_create("mx-kvstore", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, cls._size(nbytes, num_workers))
            seg = cls(fd, nbytes, num_workers)
            seg.nonce[0] = int.from_bytes(os.urandom(8), "little")
            return seg
        except BaseException:
            os.close(fd)
            raise

    @staticmethod
    def _control_bytes(num_workers):
        return _round_up(8 * (4 * num_workers + 1), _PAGE)

    @classmethod
    def _size(cls, nbytes, num_workers):
        return (cls._control_bytes(num_workers)
                + (2 + num_workers) * _round_up(max(int(nbytes), 1), _PAGE))

    @classmethod
    def attach(cls, pid, fd, nbytes, num_workers, nonce):
        """The server's segment, opened through its descriptor (a worker's);
        ``nonce``: the number the server wrote in it."""
        own = os.open(f"/proc/{int(pid)}/fd/{int(fd)}", os.O_RDWR | os.O_CLOEXEC)
        try:
            if os.fstat(own).st_size != cls._size(nbytes, num_workers):
                raise OSError(f"/proc/{pid}/fd/{fd} is not the key's segment (size "
                              f"{os.fstat(own).st_size}, expected "
                              f"{cls._size(nbytes, num_workers)})")
            seg = cls(own, nbytes, num_workers)
        finally:
            os.close(own)
        if int(seg.nonce[0]) != int(nonce):
            raise OSError(f"/proc/{pid}/fd/{fd} is not the key's segment (another process's "
                          f"descriptor: a PID namespace of its own?)")
        seg.fd = None
        return seg

    def mark_attached(self, worker):
        self.attached[worker] = np.uint64(1)

    def all_attached(self):
        return bool(self.attached.all())

    def close_fd(self):
        """The server's descriptor, once every worker opened its own."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    # -- buffers ---------------------------------------------------------------
    def value(self, b, dtype=np.uint8):
        return self._parts[b].view(dtype)

    def slot(self, worker, dtype=np.uint8):
        return self._parts[2 + worker].view(dtype)

    def index(self, view):
        """Which value buffer (0 or 1) ``view`` is."""
        at = view.ctypes.data
        for b in (0, 1):
            if self._parts[b].ctypes.data == at:
                return b
        raise ValueError("kvstore shared memory: the array is not one of the key's values")

    # -- the slot guard ----------------------------------------------------------
    def claim_slot(self, worker, limit_s):
        """Before worker ``worker`` writes its slot: every push it made before
        has been summed by the server.  Counts this push."""
        posted = self.pushed[worker]
        wait_until(lambda: int(self.consumed[worker]) >= posted, limit_s,
                   f"the server did not sum worker {worker}'s push {posted} of this key")
        self.pushed[worker] = posted + 1

    def consume(self, worker):
        """The server summed worker ``worker``'s push: its slot is free."""
        self.consumed[worker] += np.uint64(1)

    # -- the read guard ----------------------------------------------------------
    def note_read(self, worker, b):
        """The server answered a read of value buffer ``b`` to ``worker``."""
        self.answered[worker, b] += np.uint64(1)

    def finish_read(self, worker, b):
        """Worker ``worker`` copied out all it was answered from buffer ``b``."""
        self.read_done[worker, b] += np.uint64(1)

    def readers_done(self, b):
        return bool((self.read_done[:, b] >= self.answered[:, b]).all())

    def wait_readers(self, b, limit_s):
        """Before the server writes value buffer ``b``: its readers finished."""
        wait_until(lambda: self.readers_done(b), limit_s,
                   f"a worker did not finish copying value buffer {b} of this key")
