"""The MPI side of the distributed store: one thread per process owns the
requests in flight (``Loop``), and a worker's ``Client`` turns each
push/pull into requests to servers, with a deadline.

The loop never blocks inside MPI: it tests its requests
(``MPI.Request.Testsome``) and, when none finished, waits on a condition
variable for a short, growing time (``POLL_MIN_S`` doubling up to
``POLL_MAX_S``, or ``POLL_BUSY_MAX_S`` while several requests are in
flight, ``tick`` when none are).
MPICH's blocking waits spin a core; on a machine with fewer cores than
busy threads that spinning thread took the core the engine and main
threads needed (a 4 KB pushpull took 7-8 ms instead of 0.45 ms).  Other
threads hand work over with ``call_soon``, which notifies the condition,
so the loop picks it up at once; deadlines are checked at least every
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
        self._cv = threading.Condition(threading.Lock())
        self._incoming = []
        self._stopped = False
        self._reqs, self._callbacks = [], []
        self._pause = 0.0           # how long to wait before the next test
        self._last_check = time.monotonic()
        self._parent = os.getppid()
        self.checks = [self._exit_if_orphaned]     # called at least every tick

    # -- any thread ---------------------------------------------------------
    def call_soon(self, fn):
        with self._cv:
            self._incoming.append(fn)
            self._cv.notify()

    def stop(self):
        with self._cv:
            self._stopped = True
            self._cv.notify()

    def cancel_pending(self, wait_s=0.5):
        """At the end: cancels the receives still posted (the server's next
        header), so MPI does not warn of leaked requests; gives the sends
        still in flight ``wait_s`` seconds to leave."""
        reqs = self._reqs
        for req in reqs:
            req.Cancel()
        deadline = time.monotonic() + wait_s
        while reqs and not self.MPI.Request.Testall(reqs) and time.monotonic() < deadline:
            time.sleep(0.001)
        self._reqs, self._callbacks = [], []

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

    def run_once(self):
        """Runs handed-over work, tests the requests (after a pause when
        the last test found nothing), runs the callbacks of those that
        finished, and the checks once a tick.  False once stopped."""
        with self._cv:
            if not self._incoming and not self._stopped and self._pause:
                self._cv.wait(self._pause if self._reqs else self.tick)
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
            self._pause = 0.0
        elif todo:
            self._pause = 0.0
        else:
            longest = POLL_BUSY_MAX_S if len(self._reqs) > 1 else POLL_MAX_S
            self._pause = min(longest, max(POLL_MIN_S, 2 * self._pause))
        now = time.monotonic()
        if now - self._last_check >= self.tick or not self._reqs:
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
        posts it (its errors complete it, failed)."""
        return _Gated(self, ticket, start)

    def _ready(self, ticket, post):
        with self._lock:
            self._waiting[ticket] = post
            while self._turn in self._waiting:
                post = self._waiting.pop(self._turn)
                self._turn += 1
                post()


class _Gated:
    __slots__ = ("order", "ticket", "start", "done", "turn_taken")

    def __init__(self, order, ticket, start):
        self.order, self.ticket, self.start, self.done = order, ticket, start, None
        self.turn_taken = False

    def __call__(self, done):
        self.done, self.turn_taken = done, True
        self.order._ready(self.ticket, self._post)

    def _post(self):
        try:
            self.start(self.done)
        except BaseException as exc:   # this transfer fails; the key's next ones go on
            self.done(f"{type(exc).__name__}: {exc}")

    def release(self):
        """Called by the engine once the function is done or was skipped:
        a skipped transfer gives up its turn."""
        if not self.turn_taken:
            self.turn_taken = True
            self.order._ready(self.ticket, lambda: None)


class KVStoreTimeout(RuntimeError):
    pass


class _Call:
    """One request to one server: its MPI requests and its deadline."""
    __slots__ = ("client", "server", "op", "key", "reply", "keep", "left", "deadline",
                 "on_done", "finished")


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
        self.failure = None
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
                label=None, shared=None):
        """Sends ``op`` for ``key`` to server index ``server``; ``send`` (bytes
        of an array) goes with it, the answer's data lands in ``recv``.

        ``shared`` (data through shared memory, flag ARG_SHM): ``(nbytes,
        fill, take)``; ``fill(i)`` (or None) puts chunk i in place before its
        token leaves, ``take(i, buffer)`` (or None) copies chunk i of the
        answer out, on the transport thread, as its token lands.

        The MPI requests are posted here, on the caller's thread (MPI runs
        THREAD_MULTIPLE), so the message leaves at once; the transport
        thread only watches them (a thread wake-up off the critical path)."""
        if self.failure is not None:
            failure = self.failure
            self.loop.call_soon(lambda: on_done(failure))
            return
        seq, call, reqs, hooks = self._post(server, op, key, on_done, send, recv, dtype, arg,
                                            label, shared)
        self.loop.call_soon(lambda: self._watch(seq, call, reqs, hooks))

    def _post(self, server, op, key, on_done, send, recv, dtype, arg, label, shared):
        MPI, comm = self.MPI, self.comm
        seq = next(self._seq)
        rep_tag, rep_data_tag, req_data_tag = self.tags.of(seq)
        rank = self.layout.servers[server]
        call = _Call()
        call.client, call.server, call.op = self, server, op
        call.key = key if label is None else label
        call.reply = np.zeros(wire.HEADER_WORDS, np.uint64)
        nbytes = shared[0] if shared else 0 if send is None else send.nbytes
        head = wire.header(op, key, seq, nbytes, dtype, arg, self.layout.rank)
        fill, take = shared[1:] if shared else (None, None)
        tokens = np.arange(len(wire.chunks(nbytes)), dtype=np.uint64) if shared else None
        call.keep = (head, send, recv, tokens)
        call.deadline = time.monotonic() + self.timeout
        call.on_done, call.finished = on_done, False
        reqs = [comm.Irecv([call.reply, MPI.BYTE], source=rank, tag=rep_tag)]
        hooks = {}
        if take is not None:
            answers = np.zeros(len(tokens), np.uint64)
            call.keep += (answers,)
            for i in range(len(tokens)):
                hooks[len(reqs)] = lambda i=i: take(i, int(answers[i]))
                reqs.append(comm.Irecv([answers[i:i + 1], MPI.BYTE], source=rank,
                                       tag=rep_data_tag))
        if recv is not None:
            reqs += wire.post_chunks(lambda piece, tag: comm.Irecv([piece, MPI.BYTE], source=rank,
                                                                   tag=tag), recv, rep_data_tag)
        reqs.append(comm.Isend([head, MPI.BYTE], dest=rank, tag=wire.TAG_REQUEST))
        if send is not None:
            reqs += wire.post_chunks(lambda piece, tag: comm.Isend([piece, MPI.BYTE], dest=rank,
                                                                   tag=tag), send, req_data_tag)
        if fill is not None:
            for i in range(len(tokens)):
                fill(i)
                reqs.append(comm.Isend([tokens[i:i + 1], MPI.BYTE], dest=rank,
                                       tag=req_data_tag))
        call.left = len(reqs)
        return seq, call, reqs, hooks

    def _watch(self, seq, call, reqs, hooks):
        self._calls[seq] = call
        for i, req in enumerate(reqs):
            self.loop.add(req, lambda c=call, s=seq, first=(i == 0), hook=hooks.get(i):
                          self._part_done(c, s, first, hook))

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
            # The data never comes: the call ends here (its receive stays posted).
            self._finish(call, seq, wire.get_text(call.reply), fatal=True)
            return
        call.left -= 1
        if call.left == 0:
            self._finish(call, seq, None)

    def _finish(self, call, seq, error, fatal=False):
        call.finished = True
        self._calls.pop(seq, None)
        if error is not None and fatal and self.failure is None:
            self.failure = error
        call.on_done(error)

    def _check_deadlines(self):
        if not self._calls:
            return
        now = time.monotonic()
        for seq, call in list(self._calls.items()):
            if now > call.deadline:
                who = self.layout.describe(self.layout.servers[call.server])
                self._finish(call, seq, (
                    f"kvstore: {who} did not answer {wire.OP_NAMES[call.op]} of key "
                    f"{call.key} within MXNET_KVSTORE_TIMEOUT={self.timeout:g} s: it died or "
                    f"hangs"), fatal=True)
