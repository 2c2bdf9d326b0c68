"""MXDataIter: the base of the iterators MXNet implements natively.

A native iterator here is a *source* (``reset()``, ``next_batch()`` that
returns a DataBatch or raises StopIteration) whose batches are filled by
Cython/C++ with the GIL released into NDArrays from the pool, run on a
background thread ``prefetch_buffer`` batches ahead (MXNet's PrefetcherIter),
so Python consumes one batch while the next is parsed.
"""
import logging
import warnings
import weakref

import numpy as np

from mx_ndarray._alloc import empty

from mx_io.io._prefetch import BackgroundProducer
from mx_io.io.base import DataBatch, DataDesc, DataIter

__all__ = ["MXDataIter"]

# MXNet's dtype choices for the native iterators' output ('None': no change).
DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def check_dtype(api, dtype, default):
    """The output dtype name: ``default`` for None/'None', else one of DTYPES."""
    if dtype is None or dtype == "None":
        return default
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in DTYPES:
        raise ValueError(f"{api}: argument 'dtype' must be one of {('None',) + DTYPES}, "
                         f"got {dtype!r}")
    return name


def check_call_args(api, args, kwargs, required):
    """The checks every native iterator's constructor makes, as MXNet's:
    keyword arguments only, the unknown ones ignored (with a warning here),
    the ``required`` ones (name: value) given, a positive batch_size.
    Returns batch_size as an int."""
    if args:
        raise TypeError(f"{api} can only accept keyword arguments")
    if kwargs:
        warnings.warn(f"{api}: ignoring unknown arguments {sorted(kwargs)}", stacklevel=3)
    for name, value in required.items():
        if value is None:
            raise TypeError(f"{api}: argument {name!r} is required")
    batch_size = required["batch_size"]
    if isinstance(batch_size, bool) or int(batch_size) < 1:
        raise ValueError(f"{api}: argument 'batch_size' must be a positive int, "
                         f"got {batch_size!r}")
    return int(batch_size)


def new_batch_array(shape, dtype):
    """A pooled host NDArray and a flat NumPy view of its memory to fill.
    The array is new, so nothing on the engine reads or writes it yet."""
    arr = empty(shape, dtype=dtype)
    return arr, arr._host_view().reshape(-1)


class MXDataIter(DataIter):
    """The Python face of a native iterator: reads its first batch at once
    (for ``provide_data``/``provide_label``), then batches from the
    background thread.

    ``getdata``/``getlabel`` return the current batch's single data and label
    NDArray, as MXNet's MXDataIter.  Batches are new arrays, never
    overwritten by later ones.
    """

    def __init__(self, source, data_name="data", label_name="softmax_label",
                 prefetch_buffer=4, **_):
        super().__init__()
        self._source = source
        self._producer = BackgroundProducer(source.next_batch, depth=max(1, int(prefetch_buffer)),
                                            name=type(self).__name__)
        self._finalizer = weakref.finalize(self, self._producer.stop)
        self._debug_skip_load = False
        self._debug_at_begin = True
        self._current = None
        self.first_batch = None
        try:
            self.first_batch = self.next()
        except StopIteration:
            self.close()
            raise ValueError(f"{type(self).__name__}: the data holds no batch of the "
                             "batch_size asked for") from None
        except BaseException:
            # The error's traceback holds this frame (and so self): without
            # close() the finalizer's registry would keep the producer, its
            # error and the batches it made alive for good.
            self.close()
            raise
        data, label = self.first_batch.data[0], self.first_batch.label[0]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype)]
        self.batch_size = data.shape[0]

    def close(self):
        """Stops the background thread (also done when collected)."""
        self._finalizer()

    def debug_skip_load(self):
        """From now on every batch is the first one (to time a network
        without the loading)."""
        self._debug_skip_load = True
        logging.info("Set debug_skip_load to be true, will simply return first batch")

    def reset(self):
        self._debug_at_begin = True
        self.first_batch = None
        self._producer.restart(before_start=self._source.reset)
        if not self._finalizer.alive:       # closed after an error: guard the new thread
            self._finalizer = weakref.finalize(self, self._producer.stop)

    def next(self):
        if self._debug_skip_load and not self._debug_at_begin:
            return self._current
        if self.first_batch is not None:
            self._current, self.first_batch = self.first_batch, None
            return self._current
        self._debug_at_begin = False
        try:
            self._current = self._producer.get()
        except StopIteration:
            raise
        except BaseException:
            # As in __init__: the error's traceback holds this frame, so the
            # finalizer's registry must let go of the producer.
            self.close()
            raise
        return self._current

    def iter_next(self):
        try:
            self.next()
        except StopIteration:
            return False
        return True

    def getdata(self):
        return self._current.data[0]

    def getlabel(self):
        return self._current.label[0]

    def getindex(self):
        return self._current.index

    def getpad(self):
        return self._current.pad


def batch_of(data, label, pad, index):
    return DataBatch(data=[data], label=[label], pad=pad, index=index)
