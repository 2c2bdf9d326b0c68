"""``mx.monitor`` (also ``mx.mon``): Monitor, statistics of an executor's
arrays every few batches, as in MXNet 1.9.1."""
import logging
import math
import re

from mx import ndarray
from mx.ndarray import NDArray

__all__ = ["Monitor"]


def _norm_stat(x):
    """|x|_2 / sqrt(size): queued, not waited for."""
    return ndarray.norm(x) / math.sqrt(x.size)


class Monitor:
    """Collects ``stat_func`` of every node output (and input with
    ``monitor_all``) whose name matches ``pattern``, and of the arguments
    and auxiliary states, on batches ``0, interval, 2*interval, ...``.

    Parameters
    ----------
    interval : int
        Batches between collections.
    stat_func : callable, optional
        NDArray -> NDArray (or list of them); default ``norm(x)/sqrt(x.size)``.
    pattern : str
        Regular expression on names (``re.match``).
    sort : bool
        Sort the results by name.
    monitor_all : bool
        Watch node inputs as well as outputs.

    Use: ``mon.install(executor)``, then ``mon.tic()`` before forward and
    ``mon.toc_print()`` (or ``toc()``) after backward.  Statistics are
    computed asynchronously; ``toc`` reads them.
    """
    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        if int(interval) < 1:
            raise ValueError(f"Monitor: interval must be a positive number of batches, "
                             f"got {interval}")
        self.stat_func = _norm_stat if stat_func is None else stat_func
        self.interval = int(interval)
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name, array):
        """The executor's monitor callback: queues the statistic of ``array``."""
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        """Installs the monitor on an Executor (several may share one Monitor)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Starts collecting if this batch is one to watch; call before forward."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Ends collecting; ``[(step, name, 'stat\\t...'), ...]``.  Call after backward."""
        if not self.activated:
            return []
        for exe in self.exes:
            sym = exe.symbol
            for names, arrays in ((sym.list_arguments(), exe.arg_arrays),
                                  (sym.list_auxiliary_states(), exe.aux_arrays)):
                for name, array in zip(names, arrays):
                    if self.re_prog.match(name):
                        self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda x: x[1])
        res = [(n, k, _format(v)) for n, k, v in self.queue]
        self.queue = []
        return res

    def toc_print(self):
        """Ends collecting and logs the results."""
        for n, k, v in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(n, k, v))


def _format(values):
    if isinstance(values, NDArray):
        values = [values]
    if not isinstance(values, list):
        raise TypeError(f"Monitor: stat_func must return an NDArray or a list of NDArrays, "
                        f"got {type(values).__name__}")
    out = ""
    for v in values:
        if not isinstance(v, NDArray):
            raise TypeError(f"Monitor: stat_func returned a {type(v).__name__} in its list; "
                            "expected NDArrays")
        out += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
    return out
