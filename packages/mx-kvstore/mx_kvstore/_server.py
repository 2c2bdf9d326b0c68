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

A request the server cannot serve (a key never initialised, a value of the
wrong size, an optimizer command it cannot build) is answered with the
reason and the server goes on.  An exception while serving (an updater
that raised, say) leaves the key's round or value half done: the server
answers the request with the server's rank, the key and the exception,
tells every worker (``_abort``: they fail their waiting and later calls at
once) and ends with status 1.  MXNet's ps-lite server dies there too, but
its workers are not told and wait.
"""
import json
import os
import time

import numpy as np

from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_wire as wire
from mx_kvstore import _native, _server_role, _server_rows, optimizer_hooks
from mx_kvstore._dist_shm import Segment, owner
from mx_kvstore._dist_transport import POLL_BUSY_MAX_S, POLL_MIN_S, Loop, send_abort
from mx_kvstore.compression import GradientCompression


def _buffer(size, dtype, memory=None):
    """An NDArray (for the updater) and its flat host view (for MPI): new,
    or over ``memory`` (a value buffer of the key's shared memory)."""
    from mx_ndarray import ndarray as nd
    if memory is not None:
        return nd.from_numpy(memory, zero_copy=True), memory
    array = nd.zeros((size,), dtype=dtype)
    array.wait_to_read()
    return array, array._host_view()


class _Entry:
    """One stored slice (``nd``/``view``, and the sends still reading it)
    and its merge buffer, the spare (``spare_nd``/``spare``/``spare_sends``).

    A sync round receives its first push straight into the spare and adds
    the others into it in place; without an updater the spare then becomes
    the stored value and the stored value the next spare (a swap, no
    copy), so a buffer is written again only once the pulls it answered
    have left.

    With ``shm`` (a ``Segment``: workers on this host) both buffers live
    in it, and the pushes of those workers arrive in its slots."""

    def __init__(self, size, dtype, shm=None):
        self.shm = shm
        memory = [None, None] if shm is None else [shm.value(b, dtype) for b in (0, 1)]
        self.nd, self.view = _buffer(size, dtype, memory[0])
        self.sends = []
        self.spare_nd = self.spare = None
        if shm is not None:
            self.spare_nd, self.spare = _buffer(size, dtype, memory[1])
        self.spare_sends = []
        self.filling = False        # the round's first push goes into the spare
        self.recv = {}              # (worker, compressed) -> receive buffer

    def swap(self):
        self.nd, self.spare_nd = self.spare_nd, self.nd
        self.view, self.spare = self.spare, self.view
        self.sends, self.spare_sends = self.spare_sends, self.sends


class _Round:
    """A sync round of one key: the pushes so far (worker -> (header,
    buffer)), the pulls held to its end, how many workers' data landed per
    unit (chunk), and the units not yet summed.  An ``early`` round (no
    updater, no compression) answers its pushpulls and held pulls chunk by
    chunk as each is summed; ``summed`` lists those chunks, in order.  In a
    ``reduce`` round the workers sum (_dist_shm.py): a chunk's owner counts
    as landed when its push arrives, and ``reduced`` holds the chunks their
    owners reported summed."""

    def __init__(self, units, early, reduce=False):
        self.started = time.monotonic()
        self.arrived = {}
        self.pulls = []             # (worker, header): pulls sent after a push of this round
        self.counts = [0] * units
        self.left = units
        self.early = early
        self.summed = []
        self.reduce = reduce
        self.reduced = set()

    def readers(self):
        """(worker, header) of every request answered with the round's sum."""
        return [(w, h) for w, (h, _) in self.arrived.items()
                if int(h[wire.OP]) == wire.PUSHPULL] + self.pulls


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
        self.controller = None      # KVStoreServer's: the workers' user commands
        self.threshold = None       # 2bit compression's, once a worker set it
        self.rounds = {}            # key -> _Round
        self.steps = {}             # key -> pushes per worker (bounded delay)
        self.held = {}              # key -> [(started, worker, step, answer)]
        self.barrier = {}           # worker -> header
        self.barrier_started = None
        self.attaching = []         # segments a worker asked for since the last barrier
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
        self._guarded(int(head[wire.ARG2]), head, self._dispatch)(head)

    def _dispatch(self, head):
        op = int(head[wire.OP])
        worker_rank = int(head[wire.ARG2])
        if op == wire.STOP:
            self.stopped.add(worker_rank)
            return
        if self.failure is not None:
            self._answer(worker_rank, head, error=self.failure, fatal=True)
            return
        key = int(head[wire.KEY])
        nbytes = int(head[wire.NBYTES])
        if op == wire.INIT:
            dtype = wire.DTYPES[int(head[wire.DTYPE])]
            entry = _Entry(nbytes // np.dtype(dtype).itemsize, dtype, self._segment(head))
            old = self.store.get(key)
            if old is not None:
                self._wait_sends(old.sends + old.spare_sends)
                if old.shm is not None:
                    old.shm.close_fd()
            self.store[key] = entry
            self._receive(worker_rank, head, entry.view, lambda: self._answer(worker_rank, head))
        elif op in (wire.PUSH, wire.PUSHPULL):
            entry = self._entry(worker_rank, head)
            if entry is None:
                return
            compressed = self._compressed(head)
            shared = self._shared(worker_rank, head, entry)
            if shared is None:
                return
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
            if shared:
                # the data are in the worker's slot; the spare takes the sum
                buf = entry.shm.slot(self.layout.workers.index(worker_rank), entry.view.dtype)
                if not entry.filling:
                    entry.filling = True
                    self._spare(entry)
            elif self.sync and not compressed and not entry.filling:
                entry.filling = True
                buf = self._spare(entry)
            else:
                buf = entry.recv.get((worker_rank, compressed))
            if buf is None:
                buf = entry.recv[(worker_rank, compressed)] = (
                    np.empty(expected // 4, np.float32) if compressed
                    else np.empty_like(entry.view))
            if self.sync:
                self._join_round(key, entry, worker_rank, head, buf, compressed)
            else:
                self._receive(worker_rank, head, buf,
                              lambda: self._pushed_async(worker_rank, head, buf))
        elif op == wire.PULL:
            entry = self._entry(worker_rank, head)
            if entry is not None and self._shared(worker_rank, head, entry) is not None:
                round_ = self.rounds.get(key)
                if round_ is not None and worker_rank in round_.arrived:
                    # The worker pushed in this round, then pulled without
                    # waiting for the answer: it gets the round's result
                    # (the chunks summed so far at once, as a pushpull).
                    round_.pulls.append((worker_rank, head))
                    for chunk in round_.summed:
                        self._send_data(worker_rank, head, entry.spare, entry.spare_sends, chunk)
                else:
                    self._answer(worker_rank, head, data=True)
        elif op == wire.BARRIER:
            if not self.barrier:
                self.barrier_started = time.monotonic()
            self.barrier[worker_rank] = head
            if len(self.barrier) == self.layout.num_workers:
                for rank, h in self.barrier.items():
                    self._answer(rank, h)
                self.barrier = {}
                self._close_attached()
        elif op == wire.SHM_ATTACH:
            self._attach(worker_rank, head)
        elif op == wire.PUSH_ROWS:
            _server_rows.on_push(self, worker_rank, head)
        elif op == wire.PULL_ROWS:
            _server_rows.on_pull(self, worker_rank, head)
        elif op == wire.COMMAND:
            text = np.empty(nbytes, np.uint8)
            self._receive(worker_rank, head, text,
                          lambda: self._command(worker_rank, head, bytes(text).decode()))
        else:
            self._answer(worker_rank, head, error=f"kvstore server: unknown request {op}")

    def _receive(self, rank, head, buf, then=None, each=None):
        """Receives the request's data into ``buf`` chunk by chunk;
        ``each(i)`` as chunk i lands, ``then()`` once all have."""
        tag = self.tags.of(int(head[wire.SEQ]))[2]
        if wire.moves_shared(head):
            # the data are in shared memory: a token per chunk says it is there
            tokens = np.empty(len(wire.chunks(buf.nbytes)), np.uint64)
            reqs = [self.comm.Irecv([tokens[i:i + 1], self.MPI.BYTE], source=rank, tag=tag)
                    for i in range(len(tokens))]
        else:
            reqs = wire.post_chunks(lambda piece, t: self.comm.Irecv([piece, self.MPI.BYTE],
                                                                     source=rank, tag=t), buf, tag)
        left = [len(reqs)]

        @self._guarded(rank, head)
        def landed(i):
            if each is not None:
                # a shared-memory token names its chunk (a worker-summed
                # round's come out of order), a data message is chunk i
                each(int(tokens[i]) if wire.moves_shared(head) else i)
            left[0] -= 1
            if left[0] == 0 and then is not None:
                then()
        for i, req in enumerate(reqs):
            self.loop.add(req, lambda i=i: landed(i))

    def _send_data(self, rank, head, view, sends, chunk=None, skip=False):
        """Sends ``view`` (all its chunks, or chunk ``chunk``) as the
        request's answer data; the requests join ``sends``.  ``skip``: the
        worker wrote that chunk itself (a worker-summed round)."""
        tag = self.tags.of(int(head[wire.SEQ]))[1]
        raw = view.view(np.uint8)
        shm = self.store[int(head[wire.KEY])].shm if wire.moves_shared(head) else None
        b = None if shm is None else shm.index(view)
        for i, (lo, hi) in enumerate(wire.chunks(raw.nbytes)):
            if chunk is None or i == chunk:
                if shm is None:
                    req = self.comm.Isend([raw[lo:hi], self.MPI.BYTE], dest=rank, tag=tag)
                else:
                    # a token naming the chunk and the value buffer it is in
                    if i == 0:
                        shm.note_read(self.layout.workers.index(rank), b)
                    req = self._send_token(rank, head, wire.answer_token(
                        wire.SKIP if skip else wire.COPY, b, i))
                sends.append(req)
                self.loop.add(req, lambda: None)

    def _send_token(self, rank, head, value):
        """One answer token of a shared-memory request (its Isend)."""
        token = np.array([value], np.uint64)        # the request keeps it alive
        return self.comm.Isend([token, self.MPI.BYTE], dest=rank,
                               tag=self.tags.of(int(head[wire.SEQ]))[1])

    def _entry(self, rank, head):
        entry = self.store.get(int(head[wire.KEY]))
        if entry is None:
            self._answer(rank, head, error=(
                f"kvstore: key {self._user_key(int(head[wire.KEY]))} was not initialised "
                "(call kv.init on every worker first)"))
        return entry

    def _user_key(self, server_key):
        return keys.decode(server_key, self.index, self.layout.num_servers)

    # -- shared memory (workers on this host, dist_sync) --------------------------
    @staticmethod
    def _compressed(head):
        return bool(int(head[wire.ARG]) & wire.ARG_COMPRESSED)

    def _segment(self, head):
        """Shared memory for a key worker 0 inits with ARG_SHM, when some
        worker runs on this host (None: the key's data move as messages)."""
        if not (int(head[wire.ARG]) & wire.ARG_SHM
                and any(self.layout.shares_host(r) for r in self.layout.workers)):
            return None
        try:
            return Segment.create(int(head[wire.NBYTES]), self.layout.num_workers)
        except OSError:         # no memfd here: messages it is
            return None

    def _shared(self, rank, head, entry):
        """Whether the request's data move through the key's shared memory;
        None when it asks for that and the key has none (answered failed)."""
        if not wire.moves_shared(head):
            return False
        if entry.shm is None or not self.sync or not self.layout.shares_host(rank):
            self._answer(rank, head, error=(
                f"kvstore: {wire.OP_NAMES[int(head[wire.OP])]} of key "
                f"{self._user_key(int(head[wire.KEY]))} asks for shared memory; the server "
                f"has none for it (it needs dist_sync, the worker on the server's host, and "
                f"an init with MXNET_KVSTORE_SHM on)"))
            return None
        return True

    def _attach(self, rank, head):
        """Answers a worker's SHM_ATTACH: this process's id, the segment's
        descriptor, value bytes and nonce (zeros: none for this worker)."""
        entry = self._entry(rank, head)
        if entry is None:
            return
        info = np.zeros(4, np.uint64)
        if entry.shm is not None and entry.shm.fd is not None and self.layout.shares_host(rank):
            info[:] = (os.getpid(), entry.shm.fd, entry.shm.nbytes, int(entry.shm.nonce[0]))
            self.attaching.append(entry.shm)
        self._answer(rank, head)
        self._send_data(rank, head, info, [])

    def _close_attached(self):
        """After a barrier every worker has opened the segments it asked
        for (it attaches before the barrier): their descriptors close."""
        for shm in self.attaching:
            shm.close_fd()
        self.attaching = []

    # -- answering -------------------------------------------------------------
    def _answer(self, rank, head, error=None, data=False, fatal=False):
        """OK (with the key's value when ``data``) or FAILED with ``error``;
        ``fatal``: this server is unusable (the worker fails every call)."""
        rep_tag, rep_data_tag, _ = self.tags.of(int(head[wire.SEQ]))
        reply = wire.header(wire.FAILED if error else wire.OK, head[wire.KEY], head[wire.SEQ],
                            arg=wire.SERVER_FAILED if fatal else wire.REQUEST_FAILED)
        if error:
            wire.set_text(reply, error)
        self.loop.add(self.comm.Isend([reply, self.MPI.BYTE], dest=rank, tag=rep_tag),
                      lambda: None)
        if data and not error:
            entry = self.store[int(head[wire.KEY])]
            self._send_data(rank, head, entry.view, entry.sends)

    def _wait_sends(self, sends):
        """Before a buffer is written: the sends still reading it finish
        (their receivers posted them first, so this is a copy's time)."""
        deadline = time.monotonic() + self.wait_limit
        pause = 0.0     # grows, so a worker that stopped receiving costs no spinning core
        while sends and not self.MPI.Request.Testall(sends):
            if time.monotonic() > deadline:
                raise TimeoutError("kvstore server: a worker stopped receiving a pulled value")
            time.sleep(pause)
            pause = min(POLL_BUSY_MAX_S, max(POLL_MIN_S, 2 * pause))
        if sends:
            sends.clear()
            self.loop.drop_completed()      # the loop held the same requests

    def _wait_readers(self, entry, view):
        """Before a value buffer in shared memory is written: the workers
        answered from it finished copying it out."""
        if entry.shm is not None:
            entry.shm.wait_readers(entry.shm.index(view), self.wait_limit)

    # -- updating --------------------------------------------------------------
    def _pushed_async(self, rank, head, buf):
        key = int(head[wire.KEY])
        entry = self.store[key]
        if self.updater is None:
            self._answer(rank, head, error=(
                "kvstore: dist_async needs an optimizer on the servers "
                "(kv.set_optimizer) before the first push"))
            return
        if head[wire.ARG]:
            spare = self._spare(entry)
            _native.dequantize_2bit_host(buf, spare, self.threshold)
            buf = spare
        self._apply(key, entry, buf)
        self._hold_or_answer(key, rank, head)

    def _join_round(self, key, entry, rank, head, buf, compressed):
        """A sync push: its data lands chunk by chunk; a chunk every worker
        has sent is summed into the spare at once (2bit pushes: the whole
        value, once), and without an updater answered to the pushpulls
        then, while later chunks still arrive."""
        reduce = wire.moves_shared(head) and bool(int(head[wire.ARG]) & wire.ARG_REDUCE)
        round_ = self.rounds.get(key)
        if round_ is None:
            units = 1 if compressed else len(wire.chunks(entry.view.nbytes))
            round_ = self.rounds[key] = _Round(units, self.updater is None and not compressed,
                                               reduce)
        elif round_.reduce != reduce:
            raise RuntimeError(f"its push {'asks' if reduce else 'does not ask'} for a "
                               f"worker-summed round, the round's first push "
                               f"{'did' if round_.reduce else 'did not'} "
                               f"(MXNET_KVSTORE_SHM_REDUCE_BYTES differs between workers?)")
        round_.arrived[rank] = (head, buf)
        if compressed:
            self._receive(rank, head, buf, then=lambda: self._unit_landed(key, entry, None))
            return
        self._receive(rank, head, buf,
                      each=lambda token: self._token_landed(key, entry, rank, token))
        if reduce:
            # the worker copied nothing in for the chunks it owns
            for chunk in range(len(round_.counts)):
                if self._owner(key, chunk) == rank:
                    self._unit_landed(key, entry, chunk)

    def _owner(self, key, chunk):
        """The MPI rank of the worker that sums ``chunk`` of ``key`` in a
        worker-summed round."""
        return self.layout.workers[owner(key, chunk, self.layout.num_workers)]

    def _token_landed(self, key, entry, rank, token):
        """A push's chunk landed (message or slot), or, with SUMMED, its
        worker summed a chunk it owns into the spare."""
        round_ = self.rounds.get(key)
        if round_ is None:          # the round failed meanwhile
            return
        chunk = token & ~wire.SUMMED
        mine = round_.reduce and self._owner(key, chunk) == rank
        if chunk >= len(round_.counts) or mine != bool(token & wire.SUMMED) \
                or chunk in round_.reduced:
            raise RuntimeError(f"unexpected shared-memory token {token:#x} (chunk {chunk} of "
                               f"{len(round_.counts)}, worker-summed round: {round_.reduce})")
        if not mine:
            self._unit_landed(key, entry, chunk)
            return
        round_.reduced.add(chunk)
        self._unit_done(key, entry, round_, chunk)

    def _unit_landed(self, key, entry, chunk):
        round_ = self.rounds.get(key)
        if round_ is None:          # the round failed meanwhile
            return
        unit = 0 if chunk is None else chunk
        round_.counts[unit] += 1
        if round_.counts[unit] < self.layout.num_workers:
            return
        if round_.reduce:
            # every slot holds the chunk: its owner sums it (into its output
            # too when it pushpulls and the round answers as it goes)
            w = self._owner(key, chunk)
            head = round_.arrived[w][0]
            out = round_.early and int(head[wire.OP]) == wire.PUSHPULL
            self.loop.add(self._send_token(w, head, wire.answer_token(
                wire.REDUCE_OUT if out else wire.REDUCE, entry.shm.index(entry.spare), chunk)),
                lambda: None)
            return
        merged = entry.spare if chunk is not None else self._spare(entry)
        if chunk is None:
            part = slice(None)
        else:
            lo, hi = wire.chunks(merged.nbytes)[chunk]
            part = slice(lo // merged.itemsize, hi // merged.itemsize)
        # The push received into the spare first: the others add to it.
        pushes = sorted(round_.arrived.values(), key=lambda hb: hb[1] is not merged)
        self._sum(merged, part, pushes)
        self._unit_done(key, entry, round_, chunk)

    def _unit_done(self, key, entry, round_, chunk):
        """Chunk ``chunk`` (None: the whole 2bit value) is summed in the
        spare: an early round answers it; the last one ends the round."""
        merged = entry.spare
        if round_.early:
            round_.summed.append(chunk)
            for worker, h in round_.readers():
                # a pushpull's owner wrote its own output (REDUCE_OUT)
                skip = (round_.reduce and int(h[wire.OP]) == wire.PUSHPULL
                        and self._owner(key, chunk) == worker)
                self._send_data(worker, h, merged, entry.spare_sends, chunk, skip=skip)
        round_.left -= 1
        if round_.left:
            return
        del self.rounds[key]
        entry.filling = False
        for worker, (h, _) in round_.arrived.items():
            if wire.moves_shared(h):
                entry.shm.consume(self.layout.workers.index(worker))
        if self.updater is None:
            entry.swap()
        else:
            self._apply(key, entry, merged)
        for worker, (h, _) in round_.arrived.items():
            if int(h[wire.OP]) != wire.PUSHPULL:
                self._answer(worker, h)
        for worker, h in round_.readers():
            self._answer(worker, h, data=not round_.early)

    def _spare(self, entry):
        """The key's merge buffer, once the pulls still reading it left."""
        if entry.spare is None:
            entry.spare_nd, entry.spare = _buffer(entry.view.size, entry.view.dtype)
        self._wait_sends(entry.spare_sends)
        self._wait_readers(entry, entry.spare)
        return entry.spare

    def _sum(self, merged, part, pushes):
        """merged[part] = the sum of the pushes' part (2bit words, whole
        values only, dequantised), in place: NumPy's add and the
        dequantisation both run without the GIL."""
        first = 0
        if len(pushes) >= 2 and all(buf is not merged and not self._compressed(head)
                                    for head, buf in pushes[:2]):
            # no push landed in merged (shared-memory slots): two in one pass,
            # float32 with streaming stores (_dist_shm_transfer.py has why)
            a, b, out = pushes[0][1][part], pushes[1][1][part], merged[part]
            if out.dtype == np.float32:
                _native.stream_add2_f32_host(a, b, out)
            else:
                np.add(a, b, out=out)
            first = 2
        for i, (head, buf) in enumerate(pushes[first:], first):
            if buf is merged:
                continue
            if self._compressed(head):
                _native.dequantize_2bit_host(buf, merged, self.threshold, accumulate=i > 0)
            elif i == 0:
                np.copyto(merged[part], buf[part])
            else:
                np.add(merged[part], buf[part], out=merged[part])

    def _apply(self, key, entry, grad):
        """The updater on the stored value (an async push, or a sync round's
        sum in the spare)."""
        self._wait_sends(entry.sends)
        self._wait_readers(entry, entry.view)
        from mx_ndarray import ndarray as nd
        grad_nd = entry.spare_nd if grad is entry.spare else nd.from_numpy(grad, zero_copy=True)
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
        """Every setting is read first and set only once all are valid: a
        command that failed leaves the server as it was (and serving)."""
        settings = {}
        try:
            command = json.loads(text)
            if "sync_mode" in command:
                settings["sync"] = bool(command["sync_mode"])
            if "max_delay" in command:
                delay = command["max_delay"]
                settings["max_delay"] = None if delay is None else int(delay)
            if "compression" in command:
                settings["threshold"] = float(command["compression"]["threshold"])
            if "optimizer" in command:
                # The optimizer's registered name and parameters (never pickle).
                settings["updater"] = optimizer_hooks.get_updater(
                    optimizer_hooks.from_json(command["optimizer"]))
            if "user" in command and self.controller is not None:
                self.controller(*command["user"])
        except Exception as exc:   # the worker gets the reason; the server goes on
            self._answer(rank, head, error=(
                f"kvstore: {self.layout.describe(self.layout.rank)}: command failed: "
                f"{type(exc).__name__}: {exc}"))
            return
        for name, value in settings.items():
            setattr(self, name, value)
        self._answer(rank, head)

    # -- failures --------------------------------------------------------------
    def _missing(self, present):
        return [self.layout.describe(r) for r in self.layout.workers if r not in present]

    def _check_deadlines(self):
        now = time.monotonic()
        limit = self.wait_limit
        failures = []
        for key, round_ in list(self.rounds.items()):
            if now - round_.started > limit:
                present = set(round_.arrived)
                if round_.reduce:       # an owner that never summed its chunks is missing too
                    present -= {self._owner(key, c) for c in range(len(round_.counts))
                                if c not in round_.reduced}
                failures.append((f"push of key {self._user_key(key)}", present,
                                 [(r, h) for r, (h, _) in round_.arrived.items()] +
                                 round_.pulls))
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
                self._answer(rank, head, error=text, fatal=True)

    def _guarded(self, rank, head, fn=None):
        """``fn`` (or the decorated function) run for ``rank``'s request
        ``head``: an exception there stops this server (``_abort``) instead
        of leaving the workers waiting for answers that never come."""
        if fn is None:
            return lambda f: self._guarded(rank, head, f)

        def run(*args):
            try:
                fn(*args)
            except Exception as exc:
                self._abort(self._failed_text(rank, head, exc), rank, head)
        return run

    def _failed_text(self, rank, head, exc):
        op = int(head[wire.OP])
        what = wire.OP_NAMES.get(op, f"request {op}")
        if op not in (wire.BARRIER, wire.COMMAND):
            try:
                what += f" of key {self._user_key(int(head[wire.KEY]))}"
            except Exception:        # a key no worker could have sent
                what += f" of server key {int(head[wire.KEY])}"
        return (f"kvstore: {self.layout.describe(self.layout.rank)} failed on the {what} from "
                f"{self.layout.describe(rank)}: {type(exc).__name__}: {exc} (the server stopped)")

    def _abort(self, text, rank=None, head=None):
        """After an exception while serving: the request that raised gets
        ``text``, then every worker an ABORT with it (their waiting and
        later calls fail at once); later requests get it too, and serve()
        ends with status 1.  Only the first failure is sent."""
        if head is not None:
            self._answer(rank, head, error=self.failure or text, fatal=True)
        if self.failure is not None:
            return
        self.failure, self.failed_at = text, time.monotonic()
        _server_role.record_error(text)     # the launcher names this rank with it
        send_abort(self.MPI, self.comm, self.layout.workers, text)

    def serve(self):
        """Serves until every worker stopped; 0, or 1 after a failure (the
        answers carrying it get a moment to leave)."""
        while len(self.stopped) < self.layout.num_workers:
            try:
                self.loop.run_once()
            except Exception as exc:
                self._abort(f"kvstore: {self.layout.describe(self.layout.rank)} failed: "
                            f"{type(exc).__name__}: {exc} (the server stopped)")
            if self.failure is not None and time.monotonic() - self.failed_at > 0.5:
                break
        self.loop.stop()
        self.loop.cancel_pending()
        return 0 if self.failure is None else 1
