"""EpochProgressBar: a per-epoch progress bar for ``fit``'s batch_end_callback."""
import logging
import sys
import time


def _tqdm_or_none(stream):
    """tqdm's class when it is installed and ``stream`` is a terminal."""
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class EpochProgressBar:
    """A batch-end callback showing each epoch's progress.

    On a terminal with tqdm installed it draws a tqdm bar on stderr (with
    samples/s); otherwise it logs a plain line every ``frequent`` batches
    and one at the end of each epoch::

        Epoch[0] Batch [50/200]	Speed: 2013.44 samples/sec

    Parameters
    ----------
    batch_size : int
        Samples per batch (for the speed).
    total : int, optional
        Batches per epoch, when known (the bar's length; the lines' /total).
    frequent : int, default 50
        Batches between plain log lines.
    stream : file, default sys.stderr
        Where tqdm draws.

    The bar does not read the metric, so it never waits for the device.
    """
    def __init__(self, batch_size, total=None, frequent=50, stream=None):
        self.batch_size = batch_size
        self.total = total
        self.frequent = max(1, int(frequent))
        self.stream = sys.stderr if stream is None else stream
        self._tqdm = _tqdm_or_none(self.stream)
        self._bar = None
        self._epoch = None
        self._count = 0
        self._tic = 0.0

    def _start(self, epoch):
        self.close()
        self._epoch, self._count, self._tic = epoch, 0, time.time()
        if self._tqdm is not None:
            self._bar = self._tqdm(total=self.total, desc=f"Epoch {epoch}", unit="batch",
                                   file=self.stream, leave=True, dynamic_ncols=True)

    def __call__(self, param):
        done = param.nbatch + 1
        if param.epoch != self._epoch or done <= self._count:
            self._start(param.epoch)
        step, self._count = done - self._count, done
        if self._bar is not None:
            self._bar.update(step)
            self._bar.set_postfix_str(f"{self._speed():.0f} samples/s", refresh=False)
        elif done % self.frequent == 0 or done == self.total:
            self._log()

    def _speed(self):
        elapsed = time.time() - self._tic
        return self._count * self.batch_size / elapsed if elapsed > 0 else float("inf")

    def _log(self):
        of = f"/{self.total}" if self.total else ""
        logging.info("Epoch[%d] Batch [%d%s]\tSpeed: %.2f samples/sec", self._epoch,
                     self._count, of, self._speed())

    def close(self):
        """Ends the current epoch's bar (the next epoch starts a new one)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
