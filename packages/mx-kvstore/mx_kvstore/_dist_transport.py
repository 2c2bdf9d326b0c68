"""The MPI side of the distributed store: one thread per process owns the
requests in flight (``Loop``), and a worker's ``Client`` turns each
push/pull into requests to servers, with a deadline.

The loop never blocks inside MPI: it tests its requests
(``MPI.Request.Testsome``) and, when none finished, waits on its wake-up
lock for a short, growing time (``POLL_MIN_S`` doubling up to
``POLL_MAX_S``, or ``POLL_BUSY_MAX_S`` while several requests are in
flight, ``tick`` when none are).
MPICH's blocking waits spin a core; on a machine with fewer cores than
busy threads that spinning thread took the core the engine and main
threads needed (a 4 KB pushpull took 7-8 ms instead of 0.45 ms).  Other
threads hand work over with ``call_soon``, which releases the wake-up lock,
so the loop picks it up at once (a plain lock used as a binary semaphore:
its timed acquire is one C call, where a Condition's timed wait costs a
new lock and Python bookkeeping on every pass, a pass being most of the
loop's CPU for a small request); deadlines are checked at least every
``tick`` seconds, so a dead or hung peer is noticed without any message.
An idle process sleeps (the server, with only its next header posted,
wakes every ``POLL_MAX_S`` for one test).
"""
import itertools
import os
import sys
import threading
import time

import numpy as np

from mx_kvstore import _dist_wire as wire

POLL_MIN_S = 20e-6
POLL_MAX_S = 1e-3
# With more than one request in flight data is moving, and MPICH moves a
# large message only inside MPI calls: test more often then.
POLL_BUSY_MAX_S = 200e-6


class Loop:
    """MPI requests in flight and the callback of each; run on one thread."""

    def __init__(self, MPI, comm, tick):
        self.MPI, self.comm, self.tick = MPI, comm, tick
        self._lock = threading.Lock()       # guards _incoming and _stopped
        self._wake = threading.Lock()       # released: work was handed over
        self._wake.acquire()
        self._incoming = []
        self._stopped = False
        self._reqs, self._callbacks = [], []
        self._standing = 0          # of those, receives kept posted (no work in flight)
        self._pause = 0.0           # how long to wait before the next test
        self._last_check = time.monotonic()
        self._parent = os.getppid()
        self.checks = [self._exit_if_orphaned]     # called at least every tick

    # -- any thread ---------------------------------------------------------
    def call_soon(self, fn):
        with self._lock:
            self._incoming.append(fn)
        self._signal()

    def stop(self):
        with self._lock:
            self._stopped = True
        self._signal()

    def _signal(self):
        try:
            self._wake.release()
        except RuntimeError:    # already released: the loop has yet to see it
            pass

    def cancel_pending(self, wait_s=0.5):
        """At the end: cancels the receives still posted (the server's next
        header), so MPI does not warn of leaked requests; gives the sends
        still in flight ``wait_s`` seconds to leave."""
        reqs = [req for req in self._reqs if req]   # a completed one is MPI_REQUEST_NULL
        for req in reqs:
            req.Cancel()
        deadline = time.monotonic() + wait_s
        while reqs and not self.MPI.Request.Testall(reqs) and time.monotonic() < deadline:
            time.sleep(0.001)
        self._reqs, self._callbacks, self._standing = [], [], 0

    # -- the loop's thread --------------------------------------------------
    def _exit_if_orphaned(self):
        """A rank whose parent (the launcher's rank guard, or mpiexec's
        proxy) is gone has lost its job: it ends instead of serving or
        waiting for peers that will never come."""
        if os.getppid() != self._parent:
            print(f"mx_kvstore: MPI rank {self.comm.Get_rank()}: its parent process "
                  f"{self._parent} is gone (the job was killed); exiting", file=sys.stderr,
                  flush=True)
            os._exit(1)

    def add(self, req, callback):
        self._reqs.append(req)
        self._callbacks.append(callback)

    def drop_completed(self):
        """Drops the requests a wait elsewhere completed (the server's
        ``_wait_sends`` tests its sends itself): mpi4py sets a request it
        completed to MPI_REQUEST_NULL, which ``Testsome`` never reports, so
        it stayed here for good (the loop polled as if busy, and the
        ``Cancel`` at the end raised on it).  Their callbacks run now."""
        done = [i for i, req in enumerate(self._reqs) if not req]
        if not done:
            return
        callbacks = [self._callbacks[i] for i in done]
        for i in reversed(done):
            del self._reqs[i]
            del self._callbacks[i]
        for cb in callbacks:
            cb()

    def add_standing(self, req, callback):
        """A receive kept posted for a message that may never come (a
        worker's abort notice): tested with the others, but alone it leaves
        the loop idle (waiting a tick, not polling)."""
        self._standing += 1

        def arrived():
            self._standing -= 1
            callback()
        self.add(req, arrived)

    def run_once(self):
        """Runs handed-over work, tests the requests (after a pause when
        the last test found nothing), runs the callbacks of those that
        finished, and the checks once a tick.  False once stopped."""
        if self._pause:
            # Returns at once when work was handed over meanwhile.
            busy = len(self._reqs) - self._standing
            self._wake.acquire(True, self._pause if busy else self.tick)
        with self._lock:
            todo, self._incoming = self._incoming, []
            stopped = self._stopped
        for fn in todo:
            fn()
        if stopped:
            return False
        finished = self.MPI.Request.Testsome(self._reqs) if self._reqs else None
        if finished:
            callbacks = [self._callbacks[i] for i in finished]
            for i in sorted(finished, reverse=True):
                del self._reqs[i]
                del self._callbacks[i]
            for cb in callbacks:
                cb()
        busy = len(self._reqs) - self._standing
        if finished or todo:
            self._pause = 0.0
        else:
            longest = POLL_BUSY_MAX_S if busy > 1 else POLL_MAX_S
            self._pause = min(longest, max(POLL_MIN_S, 2 * self._pause))
        now = time.monotonic()
        if now - self._last_check >= self.tick or not busy:
            self._last_check = now
            for check in self.checks:
                check()
        return True


class PostOrder:
    """Posts one key's requests in the order of the calls that made them,
    whichever engine worker runs their functions first.

    A pull that does not wait for the push before it on the engine (the
    server holds it until that push's sync round ends, so push + pull is
    one round trip) must still reach the server after the push, and a push
    after a pull.  Each transfer takes a ticket when it is called; its
    engine function hands its post to ``gate``, which posts it when every
    earlier ticket has posted (or was skipped by the engine after a failed
    input).  Posting is a few non-blocking MPI calls, done under the lock so
    that posts leave in ticket order."""

    def __init__(self):
        self._lock = threading.Lock()
        self._issued = 0        # tickets handed out
        self._turn = 0          # the ticket that posts next
        self._waiting = {}      # ticket -> post, ran before its turn

    def ticket(self):
        with self._lock:
            self._issued += 1
            return self._issued - 1

    def gate(self, ticket, start):
        """The engine function for the transfer of ``ticket``: ``start(done)``
        posts it (its errors complete it, failed) and may return a function
        to run once the posts are out, outside the post order."""
        return _Gated(self, ticket, start)

    def _ready(self, ticket, post):
        later = []
        with self._lock:
            self._waiting[ticket] = post
            while self._turn in self._waiting:
                post = self._waiting.pop(self._turn)
                self._turn += 1
                after = post()
                if after is not None:
                    later.append(after)
        # what a post left for later (shared-memory copies) runs unlocked:
        # the next transfer's header leaves meanwhile (a pull after a push
        # then copies the push's first chunks out while its last go in)
        for fn in later:
            fn()


class _Gated:
    __slots__ = ("order", "ticket", "start", "done", "turn_taken")

    def __init__(self, order, ticket, start):
        self.order, self.ticket, self.start, self.done = order, ticket, start, None
        self.turn_taken = False

    def __call__(self, done):
        self.done, self.turn_taken = done, True
        self.order._ready(self.ticket, self._post)

    def _post(self):
        """Posts the transfer; returns what ``start`` left to run after the
        posts (or None)."""
        try:
            return self.start(self.done)
        except BaseException as exc:   # this transfer fails; the key's next ones go on
            self.done(f"{type(exc).__name__}: {exc}")
            return None

    def release(self):
        """Called by the engine once the function is done or was skipped:
        a skipped transfer gives up its turn."""
        if not self.turn_taken:
            self.turn_taken = True
            self.order._ready(self.ticket, lambda: None)


class KVStoreTimeout(RuntimeError):
    pass


def send_abort(MPI, comm, ranks, text, wait_s=0.5):
    """Tells ``ranks`` (the workers) that this server stopped, with ``text``:
    small sends, given ``wait_s`` seconds to leave (a dead worker does not
    hold the server up)."""
    head = wire.header(wire.ABORT)
    wire.set_text(head, text)
    reqs = [comm.Isend([head, MPI.BYTE], dest=rank, tag=wire.TAG_ABORT) for rank in ranks]
    deadline = time.monotonic() + wait_s
    while not MPI.Request.Testall(reqs) and time.monotonic() < deadline:
        time.sleep(0.001)


class _Call:
    """One request to one server: its MPI requests and its deadline."""
    __slots__ = ("client", "server", "op", "key", "reply", "keep", "left", "deadline",
                 "on_done", "finished", "data_recvs")


class Client:
    """A worker's connection to the servers.  ``request`` may be called from
    any thread; ``on_done(error_text_or_None)`` runs on the transport thread."""

    def __init__(self, MPI, comm, layout, timeout):
        self.MPI, self.comm, self.layout, self.timeout = MPI, comm, layout, timeout
        self.tags = wire.Tags(comm.Get_attr(MPI.TAG_UB))
        self.loop = Loop(MPI, comm, tick=min(0.25, timeout / 20))
        self.loop.checks.append(self._check_deadlines)
        self._seq = itertools.count()
        self._calls = {}
        self.failure = None     # set once a server is unusable: every request fails
        # A server that stops after a failure tells every worker (wire.ABORT).
        self._abort_head = np.zeros(wire.HEADER_WORDS, np.uint64)
        self.loop.add_standing(comm.Irecv([self._abort_head, MPI.BYTE], source=MPI.ANY_SOURCE,
                                          tag=wire.TAG_ABORT), self._on_abort)
        self._thread = threading.Thread(target=self._run, daemon=True, name="mx-kvstore-mpi")
        self._thread.start()

    def _run(self):
        while self.loop.run_once():
            pass
        self.loop.cancel_pending()

    def close(self):
        self.loop.stop()
        self._thread.join()

    def request(self, server, op, key, on_done, send=None, recv=None, dtype=0, arg=0,
                label=None, shared=None, defer=None):
        """Sends ``op`` for ``key`` to server index ``server``; ``send`` (bytes
        of an array) goes with it, the answer's data lands in ``recv``.

        ``shared`` (data through shared memory, flag ARG_SHM): a
        ``_dist_shm_transfer.ShmTransfer``; its ``fill(i)`` puts chunk i in
        place before its token leaves, its ``on_token`` carries out each
        answer token on the transport thread as it lands (copies a chunk
        out, or sums one, whose SUMMED token then leaves).

        The MPI requests are posted here, on the caller's thread (MPI runs
        THREAD_MULTIPLE), so the message leaves at once; the transport
        thread only watches them (a thread wake-up off the critical path).
        Shared-memory chunks are copied in after the transport thread has
        the call: it copies the answer's first chunks out while this thread
        still copies the last ones in.  With ``defer`` (a function taking a
        function) the copies are handed to it instead, to run once the
        caller's other posts are out."""
        if self.failure is not None:
            failure = self.failure
            self.loop.call_soon(lambda: on_done(failure))
            return
        seq, call, reqs, hooks = self._post(server, op, key, on_done, send, recv, dtype,
                                            arg, label, shared)
        self.loop.call_soon(lambda: self._watch(seq, call, reqs, hooks))
        if shared is not None and shared.fills:
            if defer is not None:
                defer(lambda: self._fill(seq, call, shared))
            else:
                self._fill(seq, call, shared)

    def _post(self, server, op, key, on_done, send, recv, dtype, arg, label, shared):
        MPI, comm = self.MPI, self.comm
        seq = next(self._seq)
        rep_tag, rep_data_tag, req_data_tag = self.tags.of(seq)
        rank = self.layout.servers[server]
        call = _Call()
        call.client, call.server, call.op = self, server, op
        call.key = key if label is None else label
        call.reply = np.zeros(wire.HEADER_WORDS, np.uint64)
        nbytes = shared.nbytes if shared is not None else 0 if send is None else send.nbytes
        head = wire.header(op, key, seq, nbytes, dtype, arg, self.layout.rank)
        call.keep = (head, send, recv, shared)
        call.deadline = time.monotonic() + self.timeout
        call.on_done, call.finished = on_done, False
        reqs = [comm.Irecv([call.reply, MPI.BYTE], source=rank, tag=rep_tag)]
        hooks = {}
        call.data_recvs = []        # cancelled if the call fails first
        if shared is not None and shared.answers:
            answers = np.zeros(shared.answers, np.uint64)
            call.keep += (answers,)
            for i in range(shared.answers):
                hooks[len(reqs) + i] = lambda i=i: self._answered(
                    call, seq, shared, int(answers[i]), rank, req_data_tag)
                call.data_recvs.append(comm.Irecv([answers[i:i + 1], MPI.BYTE], source=rank,
                                                  tag=rep_data_tag))
        if recv is not None:
            call.data_recvs += wire.post_chunks(
                lambda piece, tag: comm.Irecv([piece, MPI.BYTE], source=rank, tag=tag), recv,
                rep_data_tag)
        reqs += call.data_recvs
        reqs.append(comm.Isend([head, MPI.BYTE], dest=rank, tag=wire.TAG_REQUEST))
        if send is not None:
            reqs += wire.post_chunks(lambda piece, tag: comm.Isend([piece, MPI.BYTE], dest=rank,
                                                                   tag=tag), send, req_data_tag)
        # the shared-memory tokens this worker sends: one per chunk, filled or summed
        call.left = len(reqs) + (0 if shared is None or shared.src is None
                                 else len(shared.tokens))
        return seq, call, reqs, hooks

    def _fill(self, seq, call, shared):
        """Chunk by chunk: ``shared.fill(i)`` copies it into shared memory,
        then its token leaves; the sends join the call on the transport
        thread."""
        rank = self.layout.servers[call.server]
        tag = self.tags.of(seq)[2]
        sends = []
        try:
            for i in shared.fills:
                shared.fill(i)
                sends.append(self.comm.Isend([shared.tokens[i:i + 1], self.MPI.BYTE], dest=rank,
                                             tag=tag))
        except Exception as exc:    # a failed copy fails the call (its tokens never all leave)
            error = f"{type(exc).__name__}: {exc}"
            self.loop.call_soon(lambda: self._finish(call, seq, error))
        self.loop.call_soon(lambda: self._watch_sends(seq, call, sends))

    def _answered(self, call, seq, shared, token, rank, tag):
        """An answer token landed (transport thread): the transfer carries
        it out; a chunk it summed is reported to the server."""
        summed = shared.on_token(token)
        if summed is not None:
            req = self.comm.Isend([shared.tokens[summed:summed + 1], self.MPI.BYTE], dest=rank,
                                  tag=tag)
            self.loop.add(req, lambda: self._part_done(call, seq, False))

    def _watch_sends(self, seq, call, sends):
        for req in sends:
            self.loop.add(req, lambda: self._part_done(call, seq, False))

    def _watch(self, seq, call, reqs, hooks):
        self._calls[seq] = call
        for i, req in enumerate(reqs):
            self.loop.add(req, lambda c=call, s=seq, first=(i == 0), hook=hooks.get(i):
                          self._part_done(c, s, first, hook))
        if self.failure is not None:       # a server failed while this was posted
            self._finish(call, seq, self.failure)

    def _part_done(self, call, seq, is_reply, hook=None):
        if call.finished:
            return
        if hook is not None:
            try:
                hook()
            except Exception as exc:    # a failed copy fails the call, not the loop
                self._finish(call, seq, f"{type(exc).__name__}: {exc}")
                return
        if is_reply and int(call.reply[wire.OP]) == wire.FAILED:
            # The data never comes: the call ends here.  Only a failure that
            # left the server unusable fails the client's other calls too.
            text = wire.get_text(call.reply)
            if int(call.reply[wire.ARG]) == wire.SERVER_FAILED:
                self._fail_all(text)
            self._finish(call, seq, text)
            return
        call.left -= 1
        if call.left == 0:
            self._finish(call, seq, None)

    def _finish(self, call, seq, error):
        if call.finished:
            return
        call.finished = True
        self._calls.pop(seq, None)
        if error is not None:
            # The answer's data will not come: its receives are cancelled
            # (they complete, cancelled, and their callbacks see ``finished``).
            for req in call.data_recvs:
                req.Cancel()
        call.on_done(error)

    def _fail_all(self, error):
        """A server is unusable: this call and every call in flight fail with
        ``error``, and so does every later request."""
        if self.failure is None:
            self.failure = error
        for seq, call in list(self._calls.items()):
            self._finish(call, seq, error)

    def _on_abort(self):
        self._fail_all(wire.get_text(self._abort_head))

    def _check_deadlines(self):
        if not self._calls:
            return
        now = time.monotonic()
        for seq, call in list(self._calls.items()):
            if now > call.deadline:
                who = self.layout.describe(self.layout.servers[call.server])
                error = (f"kvstore: {who} did not answer {wire.OP_NAMES[call.op]} of key "
                         f"{call.key} within MXNET_KVSTORE_TIMEOUT={self.timeout:g} s: it "
                         f"died or hangs")
                if self.failure is None:
                    self.failure = error
                self._finish(call, seq, error)
