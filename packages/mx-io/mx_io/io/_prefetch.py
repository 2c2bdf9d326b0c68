"""A background thread that keeps the next results of a function ready.

Used by PrefetchingIter (one per wrapped iterator) and by the native
iterators (their batch filler).  The thread holds no reference to the
iterator that owns it, so dropping the iterator stops the thread
(``weakref.finalize``); a failure in the producer is handed to the consumer
and raised there, and the consumer never waits on a thread that died.
"""
import queue
import threading

_POLL_S = 0.05      # how often a blocked side looks at the other's state

_OK, _END, _ERROR = "ok", "end", "error"


def _run(produce, results, stop):
    """The thread body: produce until StopIteration, an error or stop."""
    while not stop.is_set():
        try:
            item = (_OK, produce())
        except StopIteration:
            item = (_END, None)
        except BaseException as err:      # noqa: BLE001 (handed to the consumer)
            item = (_ERROR, err)
        while not stop.is_set():
            try:
                results.put(item, timeout=_POLL_S)
                break
            except queue.Full:
                continue
        if item[0] != _OK:
            return


class BackgroundProducer:
    """Calls ``produce()`` on a daemon thread, up to ``depth`` results ahead,
    until it raises StopIteration (the end) or another error.

    ``get()`` returns the next result, raises StopIteration at the end and
    re-raises the producer's error (its traceback is the producer's).
    ``restart()`` stops the thread, drops what it made and starts anew (call
    the producer's own reset in between through ``before_start``).
    """

    def __init__(self, produce, depth=1, name="mx-io-prefetch"):
        if depth < 1:
            raise ValueError(f"prefetch: the buffer must hold at least one batch, got {depth}")
        self._produce = produce
        self._depth = int(depth)
        self._name = name
        self._thread = None
        self._done = None       # the end or an error, once consumed: repeated by get()
        self.start()

    def start(self):
        self._results = queue.Queue(maxsize=self._depth)
        self._stop = threading.Event()
        self._done = None
        self._thread = threading.Thread(target=_run, name=self._name, daemon=True,
                                        args=(self._produce, self._results, self._stop))
        self._thread.start()

    def get(self):
        if self._done is not None:
            return self._raise(self._done)
        while True:
            try:
                kind, value = self._results.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._results.empty():
                    raise RuntimeError(f"{self._name}: the prefetch thread stopped without "
                                       "a result") from None
        if kind == _OK:
            return value
        self._done = (kind, value)
        return self._raise(self._done)

    @staticmethod
    def _raise(done):
        kind, value = done
        if kind == _END:
            raise StopIteration
        raise value

    def stop(self):
        """Stops the thread and waits for it (its current call finishes first)."""
        stop_thread(self._thread, self._stop, self._results)

    def restart(self, before_start=None):
        self.stop()
        if before_start is not None:
            before_start()
        self.start()


def stop_thread(thread, stop, results):
    """Stops a producer thread: works without the BackgroundProducer, so a
    weakref.finalize can call it after its owner is gone."""
    if thread is None:
        return
    stop.set()
    while thread.is_alive():
        try:            # unblock a put that waits for room
            results.get_nowait()
        except queue.Empty:
            pass
        thread.join(timeout=_POLL_S)
