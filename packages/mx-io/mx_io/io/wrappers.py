"""Iterators over iterators: ResizeIter (a fixed number of batches per
epoch) and PrefetchingIter (each wrapped iterator read ahead on its own
thread)."""
import weakref

from mx_io.io._prefetch import BackgroundProducer
from mx_io.io.base import DataBatch, DataDesc, DataIter

__all__ = ["ResizeIter", "PrefetchingIter"]


class _CurrentBatchIter(DataIter):
    """An iterator whose getters read ``current_batch``, a DataBatch."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_CurrentBatchIter):
    """``data_iter`` cut or stretched to ``size`` batches per epoch: it is
    reset and read again when it ends early.  ``reset_internal`` resets the
    wrapped iterator at each ``reset`` (else the next epoch goes on where
    this one stopped)."""

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


def _renamed(descs, renames):
    return [DataDesc(renames[d.name], d.shape, d.dtype) if isinstance(d, DataDesc)
            else DataDesc(renames[d[0]], *d[1:]) for d in descs]


def _stop_all(producers):
    for producer in producers:
        producer.stop()


class PrefetchingIter(_CurrentBatchIter):
    """Reads ``iters`` ahead, each on its own background thread, and joins
    their batches: data and labels concatenated in order, ``pad`` and
    ``index`` from the first.

    Parameters
    ----------
    iters : DataIter or list of DataIter
    rename_data, rename_label : list of dict, optional
        For the i-th iterator, ``{old name: new name}`` for each entry of its
        ``provide_data`` (``provide_label``).

    An error raised by a wrapped iterator is raised by ``next()``; the
    threads end when this iterator is closed or collected.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: argument 'iters' must hold at least one iterator")
        for name, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise ValueError(f"PrefetchingIter: argument {name!r} must hold one dict per "
                                 f"iterator ({len(iters)}), got {len(renames)}")
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._producers = [BackgroundProducer(it.next, depth=1, name=f"PrefetchingIter[{i}]")
                           for i, it in enumerate(iters)]
        self._finalizer = weakref.finalize(self, _stop_all, self._producers)

    @property
    def provide_data(self):
        if self.rename_data is None:
            return sum((list(it.provide_data) for it in self.iters), [])
        return sum((_renamed(it.provide_data, r) for r, it in zip(self.rename_data, self.iters)),
                   [])

    @property
    def provide_label(self):
        if self.rename_label is None:
            return sum((list(it.provide_label) for it in self.iters), [])
        return sum((_renamed(it.provide_label, r)
                    for r, it in zip(self.rename_label, self.iters)), [])

    def close(self):
        """Stops the prefetch threads (also done when collected)."""
        self._finalizer()

    def reset(self):
        for producer, it in zip(self._producers, self.iters):
            producer.restart(before_start=it.reset)

    def iter_next(self):
        batches = []
        ended = 0
        for producer in self._producers:
            try:
                batches.append(producer.get())
            except StopIteration:
                ended += 1
        if ended:
            if ended != self.n_iter:
                raise ValueError("PrefetchingIter: the iterators hold different numbers of "
                                 f"batches ({ended} of {self.n_iter} ended first)")
            return False
        if any(b.pad != batches[0].pad for b in batches):
            raise ValueError("PrefetchingIter: the iterators' batches differ in padding: "
                             f"{[b.pad for b in batches]}")
        self.current_batch = DataBatch(sum((list(b.data) for b in batches), []),
                                       sum((list(b.label or []) for b in batches), []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration
