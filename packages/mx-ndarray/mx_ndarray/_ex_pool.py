"""The threads that run NDArray-level computes (custom operators' Python
callbacks) off the engine's workers, as MXNet's CustomOperator does.

A callback pushes operators and may wait for them (``asnumpy``), which an
engine worker must never do; here it runs on a thread of its own while the
worker that started it goes on.  At most MXNET_CUSTOM_OP_NUM_THREADS
(MXNet's name and default, 16) threads run callbacks at once; a thread is
added whenever a task arrives and every running thread is taken.  A thread
that waits inside a callback (NDArray waits go through ``blocking()``)
does not count as running, so callbacks that wait for other custom
operators, nested or queued behind them, never starve for a thread; once
the wait ends, threads above the limit retire when they run out of work.
"""
import collections
import contextlib
import os
import sys
import threading

from mx_ndarray import _config

__all__ = ["submit", "blocking", "on_pool_thread", "num_threads"]

_local = threading.local()


class _Pool:
    def __init__(self):
        self.cv = threading.Condition(threading.Lock())
        self.queue = collections.deque()
        self.idle = 0
        self.blocked = 0
        self.threads = []

    def _grow(self):
        """Adds a thread when queued tasks outnumber the idle threads and
        fewer than the limit are running (call with the lock held)."""
        running = len(self.threads) - self.blocked
        if len(self.queue) > self.idle and running < _config.custom_op_num_threads():
            t = threading.Thread(target=self._loop, daemon=True,
                                 name=f"mx custom-op worker {len(self.threads)}")
            self.threads.append(t)
            t.start()
            return True
        return False

    def submit(self, fn):
        with self.cv:
            self.queue.append(fn)
            if not self._grow():
                self.cv.notify()

    def block(self, delta):
        with self.cv:
            self.blocked += delta
            if delta > 0 and self.queue:
                self._grow()

    def _loop(self):
        _local.pool = self
        me = threading.current_thread()
        with self.cv:
            while True:
                while not self.queue:
                    if len(self.threads) - self.blocked > _config.custom_op_num_threads():
                        self.threads.remove(me)      # surplus after a wait: retire
                        return
                    self.idle += 1
                    self.cv.wait()
                    self.idle -= 1
                fn = self.queue.popleft()
                self.cv.release()
                try:
                    fn()
                except BaseException as exc:   # tasks report their own errors; a bug
                    sys.unraisablehook(_Unraisable(exc, fn))   # must not kill the thread
                finally:
                    fn = None      # an idle thread must not keep the last call's arrays
                    self.cv.acquire()


class _Unraisable:
    def __init__(self, exc, fn):
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = "Exception in an mx custom-op worker task"
        self.object = fn


_pool = _Pool()


def _reset_after_fork():
    # The child has none of the parent's threads; it starts its own.
    global _pool
    _pool = _Pool()


os.register_at_fork(after_in_child=_reset_after_fork)


def submit(fn):
    """Runs ``fn()`` on a custom-op thread."""
    _pool.submit(fn)


def on_pool_thread():
    """True on a custom-op thread (inside a custom operator's callback)."""
    return getattr(_local, "pool", None) is not None


@contextlib.contextmanager
def blocking():
    """Marks a wait of the calling custom-op thread (no-op elsewhere)."""
    pool = getattr(_local, "pool", None)
    if pool is None:
        yield
        return
    pool.block(1)
    try:
        yield
    finally:
        pool.block(-1)


def num_threads():
    """How many custom-op threads exist now."""
    return len(_pool.threads)
