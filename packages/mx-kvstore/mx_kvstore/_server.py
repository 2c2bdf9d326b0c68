"""A server rank of the distributed store (design note 004, "RunServer").

It holds its slices of every key (initialised by worker 0), and decides
the consistency: in sync mode a push is buffered until every worker pushed
that key, then the sum goes through the updater (or replaces the value when
no optimizer was set) and every pusher gets its answer; in async mode each
push updates at once.  Beyond ps-lite: bounded delay (a worker more than
``max_delay`` pushes of a key ahead of the slowest is answered only when
that one catches up) and deadlines: a round, barrier or held push waiting
longer than the timeout for some worker fails every waiting request with a
message naming the workers that never came.
"""
import json
import os
import time

import numpy as np

from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_wire as wire
from mx_kvstore import _native, optimizer_hooks
from mx_kvstore._dist_transport import Loop
from mx_kvstore.compression import GradientCompression


class _Entry:
    """One stored slice: the weight as an NDArray (for the updater) and its
    flat host view (for MPI), plus the sends still reading it."""

    def __init__(self, size, dtype):
        from mx_ndarray import ndarray as nd
        self.nd = nd.zeros((size,), dtype=dtype)
        self.nd.wait_to_read()
        self.view = self.nd._host_view()
        self.sends = []
        self.merged_nd = None
        self.recv = {}              # worker -> receive buffer


class Server:
    def __init__(self, MPI, comm, layout, timeout):
        self.MPI, self.comm, self.layout = MPI, comm, layout
        self.timeout = timeout
        # The server gives up a little before the workers do, so a worker
        # hears which peer is missing rather than just that the server is silent.
        self.wait_limit = 0.8 * timeout
        self.tags = wire.Tags(comm.Get_attr(MPI.TAG_UB))
        self.index = layout.servers.index(layout.rank)
        self.loop = Loop(MPI, comm, tick=min(0.25, timeout / 20))
        self.loop.checks.append(self._check_deadlines)
        self.store = {}
        self.sync = True
        self.max_delay = None
        self.updater = None
        self.threshold = None       # 2bit compression's, once a worker set it
        self.rounds = {}            # key -> [started, {worker: (header, buffer)}]
        self.steps = {}             # key -> pushes per worker (bounded delay)
        self.held = {}              # key -> [(started, worker, step, answer)]
        self.barrier = {}           # worker -> header
        self.barrier_started = None
        self.stopped = set()
        self.failure = None
        self.failed_at = None
        self._head = None
        self._post_header()

    # -- receiving ------------------------------------------------------------
    def _post_header(self):
        self._head = np.zeros(wire.HEADER_WORDS, np.uint64)
        req = self.comm.Irecv([self._head, self.MPI.BYTE], source=self.MPI.ANY_SOURCE,
                              tag=wire.TAG_REQUEST)
        self.loop.add(req, self._on_header)

    def _on_header(self):
        head = self._head        # a worker names its own MPI rank in word ARG2
        self._post_header()
        self._dispatch(head)

    def _dispatch(self, head):
        op = int(head[wire.OP])
        worker_rank = int(head[wire.ARG2])
        if op == wire.STOP:
            self.stopped.add(worker_rank)
            return
        if self.failure is not None:
            self._answer(worker_rank, head, error=self.failure)
            return
        key = int(head[wire.KEY])
        nbytes = int(head[wire.NBYTES])
        if op == wire.INIT:
            dtype = wire.DTYPES[int(head[wire.DTYPE])]
            entry = _Entry(nbytes // np.dtype(dtype).itemsize, dtype)
            self._wait_sends(self.store.get(key))
            self.store[key] = entry
            self._receive(worker_rank, head, entry.view, lambda: self._answer(worker_rank, head))
        elif op in (wire.PUSH, wire.PUSHPULL):
            entry = self._entry(worker_rank, head)
            if entry is None:
                return
            compressed = bool(head[wire.ARG])
            expected = (4 * GradientCompression.packed_size(entry.view.size) if compressed
                        else entry.view.nbytes)
            if compressed and self.threshold is None:
                self._answer(worker_rank, head, error=(
                    "kvstore: a 2bit-compressed push reached a server that was not told the "
                    "threshold (set_gradient_compression on every worker)"))
                return
            if nbytes != expected:
                self._answer(worker_rank, head, error=(
                    f"kvstore: push of key {self._user_key(key)} carries {nbytes} bytes, the "
                    f"stored value needs {expected}"
                    f"{' (2bit words)' if compressed else ''}"))
                return
            buf = entry.recv.get((worker_rank, compressed))
            if buf is None:
                buf = entry.recv[(worker_rank, compressed)] = (
                    np.empty(expected // 4, np.float32) if compressed
                    else np.empty_like(entry.view))
            self._receive(worker_rank, head, buf, lambda: self._pushed(worker_rank, head, buf))
        elif op == wire.PULL:
            if self._entry(worker_rank, head) is not None:
                self._answer(worker_rank, head, data=True)
        elif op == wire.BARRIER:
            if not self.barrier:
                self.barrier_started = time.monotonic()
            self.barrier[worker_rank] = head
            if len(self.barrier) == self.layout.num_workers:
                for rank, h in self.barrier.items():
                    self._answer(rank, h)
                self.barrier = {}
        elif op == wire.COMMAND:
            text = np.empty(nbytes, np.uint8)
            self._receive(worker_rank, head, text,
                          lambda: self._command(worker_rank, head, bytes(text).decode()))
        else:
            self._answer(worker_rank, head, error=f"kvstore server: unknown request {op}")

    def _receive(self, rank, head, buf, then):
        tag = self.tags.of(int(head[wire.SEQ]))[2]
        self.loop.add(self.comm.Irecv([buf, self.MPI.BYTE], source=rank, tag=tag), then)

    def _entry(self, rank, head):
        entry = self.store.get(int(head[wire.KEY]))
        if entry is None:
            self._answer(rank, head, error=(
                f"kvstore: key {self._user_key(int(head[wire.KEY]))} was not initialised "
                "(call kv.init on every worker first)"))
        return entry

    def _user_key(self, server_key):
        return keys.decode(server_key, self.index, self.layout.num_servers)

    # -- answering -------------------------------------------------------------
    def _answer(self, rank, head, error=None, data=False):
        rep_tag, rep_data_tag, _ = self.tags.of(int(head[wire.SEQ]))
        reply = wire.header(wire.FAILED if error else wire.OK, head[wire.KEY], head[wire.SEQ])
        if error:
            wire.set_text(reply, error)
        self.loop.add(self.comm.Isend([reply, self.MPI.BYTE], dest=rank, tag=rep_tag),
                      lambda: None)
        if data and not error:
            entry = self.store[int(head[wire.KEY])]
            req = self.comm.Isend([entry.view, self.MPI.BYTE], dest=rank, tag=rep_data_tag)
            entry.sends.append(req)
            self.loop.add(req, lambda: None)

    def _wait_sends(self, entry):
        """Before the stored value changes: the sends still reading it finish
        (their receivers posted them first, so this is a copy's time)."""
        if entry is None or not entry.sends:
            return
        deadline = time.monotonic() + self.wait_limit
        while not self.MPI.Request.Testall(entry.sends):
            if time.monotonic() > deadline:
                raise TimeoutError("kvstore server: a worker stopped receiving a pulled value")
            time.sleep(0)
        entry.sends = []

    # -- updating --------------------------------------------------------------
    def _pushed(self, rank, head, buf):
        key = int(head[wire.KEY])
        entry = self.store[key]
        if not self.sync:
            if self.updater is None:
                self._answer(rank, head, error=(
                    "kvstore: dist_async needs an optimizer on the servers "
                    "(kv.set_optimizer) before the first push"))
                return
            if head[wire.ARG]:
                merged = self._merged(entry)
                _native.dequantize_2bit_host(buf, merged, self.threshold)
                buf = merged
            self._apply(key, entry, buf)
            self._hold_or_answer(key, rank, head)
            return
        round_ = self.rounds.setdefault(key, [time.monotonic(), {}])
        arrived = round_[1]
        arrived[rank] = (head, buf)
        if len(arrived) < self.layout.num_workers:
            return
        del self.rounds[key]
        merged = self._merged(entry)
        self._sum(merged, [(h, b) for h, b in arrived.values()])
        self._apply(key, entry, merged)
        for worker, (h, _) in arrived.items():
            self._answer(worker, h, data=int(h[wire.OP]) == wire.PUSHPULL)

    @staticmethod
    def _merged(entry):
        """The key's merge buffer (an NDArray, so the updater can take it)."""
        if entry.merged_nd is None:
            from mx_ndarray import ndarray as nd
            entry.merged_nd = nd.zeros(entry.view.shape, dtype=entry.view.dtype)
            entry.merged_nd.wait_to_read()
        return entry.merged_nd._host_view()

    def _sum(self, merged, pushes):
        """merged = the sum of the pushes (2bit words dequantised), in place:
        NumPy's add and the dequantisation both run without the GIL."""
        for i, (head, buf) in enumerate(pushes):
            if head[wire.ARG]:
                _native.dequantize_2bit_host(buf, merged, self.threshold, accumulate=i > 0)
            elif i == 0:
                np.copyto(merged, buf)
            else:
                np.add(merged, buf, out=merged)

    def _apply(self, key, entry, grad):
        self._wait_sends(entry)
        if self.updater is None:
            np.copyto(entry.view, grad)
            return
        from mx_ndarray import ndarray as nd
        grad_nd = entry.merged_nd if (entry.merged_nd is not None and
                                      grad is not None and
                                      np.shares_memory(grad, entry.merged_nd._host_view())) \
            else nd.from_numpy(grad, zero_copy=True)
        self.updater(self._user_key(key), grad_nd, entry.nd)
        entry.nd.wait_to_read()

    def _hold_or_answer(self, key, rank, head):
        if self.max_delay is None:
            self._answer(rank, head, data=int(head[wire.OP]) == wire.PUSHPULL)
            return
        steps = self.steps.setdefault(key, dict.fromkeys(self.layout.workers, 0))
        steps[rank] += 1
        self.held.setdefault(key, []).append((time.monotonic(), rank, steps[rank], head))
        self._release(key)

    def _release(self, key):
        steps = self.steps[key]
        slowest = min(steps.values())
        still = []
        for item in self.held.get(key, []):
            _, rank, step, head = item
            if step - slowest <= self.max_delay:
                self._answer(rank, head, data=int(head[wire.OP]) == wire.PUSHPULL)
            else:
                still.append(item)
        self.held[key] = still

    def _command(self, rank, head, text):
        try:
            command = json.loads(text)
            if "sync_mode" in command:
                self.sync = bool(command["sync_mode"])
            if "max_delay" in command:
                delay = command["max_delay"]
                self.max_delay = None if delay is None else int(delay)
            if "compression" in command:
                self.threshold = float(command["compression"]["threshold"])
            if "optimizer" in command:
                # The optimizer's registered name and parameters (never pickle).
                self.updater = optimizer_hooks.get_updater(
                    optimizer_hooks.from_json(command["optimizer"]))
        except Exception as exc:   # the worker gets the reason; the server goes on
            self._answer(rank, head, error=f"kvstore server: command failed: "
                                           f"{type(exc).__name__}: {exc}")
            return
        self._answer(rank, head)

    # -- failures --------------------------------------------------------------
    def _missing(self, present):
        return [self.layout.describe(r) for r in self.layout.workers if r not in present]

    def _check_deadlines(self):
        now = time.monotonic()
        limit = self.wait_limit
        failures = []
        for key, (started, arrived) in list(self.rounds.items()):
            if now - started > limit:
                failures.append((f"push of key {self._user_key(key)}", arrived.keys(),
                                 [(r, h) for r, (h, _) in arrived.items()]))
                del self.rounds[key]
        if self.barrier and now - self.barrier_started > limit:
            failures.append(("barrier", self.barrier.keys(), list(self.barrier.items())))
            self.barrier = {}
        for key, items in self.held.items():
            if items and now - min(i[0] for i in items) > limit:
                steps = self.steps[key]
                slow = min(steps.values())
                present = [r for r, s in steps.items() if s > slow]
                failures.append((f"bounded-delay wait on key {self._user_key(key)}", present,
                                 [(i[1], i[3]) for i in items]))
                self.held[key] = []
        for what, present, waiting in failures:
            missing = ", ".join(self._missing(present))
            text = (f"kvstore: {missing} did not reach the {what} within "
                    f"{limit:g} s (0.8 x MXNET_KVSTORE_TIMEOUT={self.timeout:g}): it died or hangs")
            if self.failure is None:
                self.failure, self.failed_at = text, now
            for rank, head in waiting:
                self._answer(rank, head, error=text)

    def serve(self):
        """Serves until every worker stopped; 0, or 1 after a failure (the
        answers carrying it get a moment to leave)."""
        while len(self.stopped) < self.layout.num_workers:
            self.loop.run_once()
            if self.failure is not None and time.monotonic() - self.failed_at > 0.5:
                return 1
        self.loop.stop()
        return 0
