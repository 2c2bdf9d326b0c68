"""NDArrayIter: batches over arrays held in memory (MXNet 1.9.1's semantics).

Each batch is one copy per source into a new array from the pool, of a block
of consecutive rows or of the rows a shuffled, padded or rolled-over batch
picks: for host arrays along axis 0 a nogil memcpy in the calling thread
(_rows.pyx; no engine round trip for a few hundred kB), else one engine call
(``slice_axis`` or ``take``).  No Python touches single examples, and
shuffling permutes an index, never the data.

CSRNDArray sources (or SciPy sparse matrices, converted) batch as CSR row
slices; as in MXNet 1.9.1 they need ``last_batch_handle='discard'``, and a
shuffle builds one row-permuted copy per epoch (MXNet's ``asscipy()[idx]``).
"""
import math
from collections import OrderedDict

import numpy as np

from mx_ndarray.ndarray import NDArray, array
from mx_ndarray._alloc import empty
from mx_ndarray.op import slice_axis, take
from mx_ndarray.sparse import CSRNDArray, csr_matrix

from mx_io.io import _rows
from mx_io.io.base import DataBatch, DataDesc, DataIter

__all__ = ["NDArrayIter"]

_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _is_scipy_sparse(value):
    return type(value).__module__.startswith("scipy.sparse")


def _is_array_like(value):
    """An h5py.Dataset or anything alike: a shape and row slicing, read lazily."""
    return (hasattr(value, "shape") and hasattr(value, "__getitem__")
            and not isinstance(value, (list, tuple, dict, str, bytes)))


def _init_data(data, allow_empty, default_name):
    """``data`` as MXNet's sorted list of (name, source): NDArrays stay, NumPy
    arrays and lists become NDArrays (float32 unless an NDArray), h5py-like
    objects stay as they are and are read a batch at a time."""
    if data is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: argument 'data' must not be None")
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or (
            _is_array_like(data) and not isinstance(data, dict)):
        data = [data]
    if isinstance(data, list):
        if not data and not allow_empty:
            raise ValueError("NDArrayIter: argument 'data' must hold at least one array")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict((f"_{i}_{default_name}", d) for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError("NDArrayIter: input must be an NDArray, numpy.ndarray, h5py.Dataset, "
                        f"a list of them or a dict with them as values; got {type(data).__name__}")
    out = {}
    for name, value in data.items():
        if _is_scipy_sparse(value):
            value = csr_matrix(value)
        if isinstance(value, NDArray) or (_is_array_like(value)
                                          and not isinstance(value, np.ndarray)):
            out[name] = value
            continue
        try:
            out[name] = array(value)
        except (TypeError, ValueError) as err:
            raise TypeError(f"NDArrayIter: invalid type {type(value).__name__} for {name!r}, "
                            "should be NDArray, numpy.ndarray or h5py.Dataset") from err
    return sorted(out.items())


class NDArrayIter(DataIter):
    """Iterates over NDArrays, NumPy arrays, lists, dicts of them and
    h5py.Dataset-like objects, ``batch_size`` examples at a time.

    Parameters
    ----------
    data, label : array, list of arrays or dict of name -> array
        One array is named ``data_name`` (``label_name``); a list names its
        arrays ``_0_data``, ``_1_data``, ...; a dict gives the names.  Sources
        are ordered by name, as in MXNet.
    batch_size : int
    shuffle : bool
        Reorder the examples at construction and at each ``reset`` (NumPy's
        global random state, as MXNet: ``np.random.seed`` repeats an order).
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        'pad' fills the last batch from the start of the data (``pad`` says
        how many); 'discard' drops it; 'roll_over' keeps its examples for the
        first batch of the next epoch (``pad`` of that batch counts them).
    data_name, label_name : str
    layout : str
        Its 'N' marks the batch axis.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle="pad", data_name="data", label_name="softmax_label",
                 layout="NCHW"):
        super().__init__(batch_size)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"NDArrayIter: argument 'batch_size' must be a positive int, "
                             f"got {batch_size!r}")
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError(f"NDArrayIter: argument 'last_batch_handle' must be one of "
                             f"{_LAST_BATCH_HANDLES}, got {last_batch_handle!r}")
        if not isinstance(layout, str) or "N" not in layout:
            raise ValueError(f"NDArrayIter: argument 'layout' must name the batch axis with "
                             f"'N', got {layout!r}")
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        self.layout = layout
        self._axis = layout.find("N")
        self._check_sparse(last_batch_handle)
        self._shuffled_csr = {}     # name -> this epoch's row-permuted CSR source
        self.num_data = self._count_examples()
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        # MXNet's index, shuffled in place: it drives the random stream.
        self.idx = np.arange(self.num_data)
        # Example r of the current (shuffled) order is source row _order[r]:
        # MXNet permutes its data by idx at each shuffle, so orders compose.
        self._order = np.arange(self.num_data)
        self.cursor = -self.batch_size
        self._cache_rows = None     # 'roll_over': source rows of the last, short batch
        self.reset()
        self.data_list = [v for _, v in self.data] + [v for _, v in self.label]
        self.num_source = len(self.data_list)

    def _check_sparse(self, last_batch_handle):
        for name, value in self.data + self.label:
            stype = getattr(value, "stype", "default")
            if stype == "csr":
                if last_batch_handle != "discard":
                    raise NotImplementedError("`NDArrayIter` only supports ``CSRNDArray`` with "
                                              "`last_batch_handle` set to `discard`.")
                if self._axis != 0:
                    raise ValueError(f"NDArrayIter: CSRNDArray {name!r} batches along axis 0; "
                                     f"layout {self.layout!r} puts N at axis {self._axis}")
            elif stype != "default":
                raise TypeError(f"NDArrayIter: {name!r} has storage type {stype!r}; sparse "
                                f"sources must be CSRNDArray (as in MXNet)")

    def _count_examples(self):
        counts = {}
        for name, value in self.data + self.label:
            axis = 0 if not isinstance(value, NDArray) else self._axis
            if len(value.shape) <= axis:
                raise ValueError(f"NDArrayIter: {name!r} has shape {tuple(value.shape)}, "
                                 f"without the batch axis {axis} of layout {self.layout!r}")
            counts[name] = value.shape[axis]
        if len(set(counts.values())) > 1:
            raise ValueError(f"NDArrayIter: all arrays must hold the same number of examples, "
                             f"got {counts}")
        return next(iter(counts.values()))

    def _descs(self, sources):
        descs = []
        for name, value in sources:
            shape = list(value.shape)
            shape[self._axis] = self.batch_size
            descs.append(DataDesc(name, tuple(shape), value.dtype, layout=self.layout))
        return descs

    @property
    def provide_data(self):
        """The name, shape and dtype of each data array in a batch."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """The name, shape and dtype of each label array in a batch."""
        return self._descs(self.label)

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        self._order = self._order[self.idx]
        for name, value in self.data + self.label:
            if isinstance(value, CSRNDArray):
                self._shuffled_csr[name] = csr_matrix(value.asscipy()[self._order],
                                                      ctx=value.context)

    def hard_reset(self):
        """Back to the start, dropping examples kept for 'roll_over'."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_rows = None

    def reset(self):
        """Back to the start of the data (reshuffled when ``shuffle``)."""
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            # The first batch starts with the examples the last one left over.
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        rows = self._batch_rows()
        if _length(rows) != self.batch_size:
            # A short last batch ends the epoch ('discard', 'roll_over').
            self._cache_rows = _as_rows(rows)
            raise StopIteration
        return DataBatch(data=self._gather(self.data, rows),
                         label=self._gather(self.label, rows), pad=self.getpad(), index=None)

    def _batch_rows(self):
        """The source rows of the current batch: a slice when consecutive,
        else an int64 array."""
        if self.cursor >= self.num_data:
            raise StopIteration("NDArrayIter: the epoch is over, call reset()")
        n, bs, cursor = self.num_data, self.batch_size, self.cursor
        if self.last_batch_handle == "roll_over" and -bs < cursor < 0:
            if self._cache_rows is None:
                raise RuntimeError("NDArrayIter: the first batch after reset() rolls over the "
                                   "last one, but the last one was not read with next()")
            return np.concatenate([self._cache_rows, self._order[:cursor + bs]])
        if self.last_batch_handle == "pad" and cursor + bs > n:
            wrapped = np.arange(cursor + bs - n) % n
            return np.concatenate([self._order[cursor:], self._order[wrapped]])
        end = min(cursor + bs, n)
        if not self.shuffle:
            return slice(cursor, end)
        return self._order[cursor:end]

    def _gather(self, sources, rows):
        if isinstance(rows, slice):
            return [_slice_rows(value, rows, self._axis) for _, value in sources]
        index = {}
        return [self._shuffled_csr[name][self.cursor:self.cursor + len(rows)]
                if isinstance(value, CSRNDArray) else
                _take_rows(value, rows, self._axis, index) for name, value in sources]

    def getdata(self):
        return self._gather(self.data, self._batch_rows())

    def getlabel(self):
        return self._gather(self.label, self._batch_rows())

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0


def _length(rows):
    return rows.stop - rows.start if isinstance(rows, slice) else len(rows)


def _as_rows(rows):
    return np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows


def _on_host(value, axis):
    return axis == 0 and value.context.device_type in ("cpu", "cpu_pinned")


def _host_copy(value, rows):
    """The rows of host NDArray ``value`` in a new pooled array, copied now."""
    value.wait_to_read()            # pending writes to the source land first
    count = rows.stop - rows.start if isinstance(rows, slice) else len(rows)
    out = empty((count,) + tuple(value.shape[1:]), ctx=value.context, dtype=value.dtype)
    width = math.prod(value.shape[1:])     # Python ints: no overflow, no NumPy call per batch
    src = value._host_view().reshape(value.shape[0], width).view(np.uint8)
    dst = out._host_view().reshape(count, width).view(np.uint8)
    if isinstance(rows, slice):
        _rows.copy_rows(src, rows.start, dst)
    else:
        _rows.gather_rows(src, rows, dst)
    return out


def _slice_rows(value, rows, axis):
    if isinstance(value, CSRNDArray):
        return value[rows.start:rows.stop]
    if isinstance(value, NDArray):
        if _on_host(value, axis):
            return _host_copy(value, rows)
        return slice_axis(value, axis=axis, begin=rows.start, end=rows.stop)
    return array(np.asarray(value[rows.start:rows.stop]))


def _take_rows(value, rows, axis, index):
    if isinstance(value, NDArray):
        if _on_host(value, axis):
            return _host_copy(value, rows)
        ctx = value.context
        if ctx not in index:       # one index array per device and batch
            index[ctx] = array(rows, ctx=ctx, dtype=np.int64)
        return take(value, index[ctx], axis=axis)
    # h5py reads rows in increasing order only, once each.
    unique, inverse = np.unique(rows, return_inverse=True)
    return array(np.asarray(value[unique])[inverse])
