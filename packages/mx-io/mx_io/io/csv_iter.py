"""CSVIter: batches of the rows of CSV files (MXNet 1.9.1's CSVIter)."""
import os

import numpy as np

from mx_io.io import _csv
from mx_io.io.native import (MXDataIter, batch_of, check_call_args, check_dtype,
                             new_batch_array)

__all__ = ["CSVIter"]

# The dtypes the parser writes directly; the others are parsed as float32.
_PARSED = ("float32", "float64", "int32", "int64")


def _shape(api, name, value):
    if isinstance(value, (int, np.integer)):
        value = (value,)
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{api}: argument {name!r} must be a shape (tuple of ints), got "
                        f"{value!r}") from None
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"{api}: argument {name!r} must be a non-empty shape of positive "
                         f"sizes, got {shape}")
    return shape


def _files(api, name, path):
    """The file ``path``, or the files of directory ``path`` in name order."""
    path = os.fspath(path)
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if not f.startswith(".") and os.path.isfile(os.path.join(path, f)))
        if not files:
            raise FileNotFoundError(f"{api}: argument {name!r}: directory {path} holds no files")
        return files
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{api}: argument {name!r}: no such file {path}")
    return [path]


def _batch_shape(batch_size, shape):
    # A one-value example gives a 1-D batch, as MXNet's BatchLoader.
    return (batch_size,) if shape == (1,) else (batch_size,) + shape


class _CSVSource:
    def __init__(self, loader, batch_size, data_shape, label_shape, dtype):
        self._loader = loader
        self._data_shape = _batch_shape(batch_size, data_shape)
        self._label_shape = _batch_shape(batch_size, label_shape)
        self._dtype = dtype
        self._parse = dtype if dtype in _PARSED else "float32"
        self._batch_size = batch_size

    def reset(self):
        self._loader.before_first()

    def next_batch(self):
        index = np.empty(self._batch_size, dtype=np.uint64)
        if self._parse == self._dtype:
            data, data_view = new_batch_array(self._data_shape, self._dtype)
            label, label_view = new_batch_array(self._label_shape, self._dtype)
            pad = self._loader.fill(data_view, label_view, index)
        else:
            data_view = np.empty(int(np.prod(self._data_shape)), self._parse)
            label_view = np.empty(int(np.prod(self._label_shape)), self._parse)
            pad = self._loader.fill(data_view, label_view, index)
            data, out = new_batch_array(self._data_shape, self._dtype)
            out[...] = data_view
            label, out = new_batch_array(self._label_shape, self._dtype)
            out[...] = label_view
        if pad < 0:
            raise StopIteration
        return batch_of(data, label, pad, index)


class CSVIter(MXDataIter):
    """Batches of the rows of a CSV file (or of every file in a directory).

    Each row holds one example of ``data_shape``; ``label_csv`` (optional,
    else labels are 0) holds one label of ``label_shape`` per row.  With
    ``round_batch`` (default) the last batch is completed from the start of
    the data and the next epoch goes on after the rows it took (MXNet's
    semantics); without it the last batch is padded (``pad``; its padding
    rows are zeros).  ``dtype`` 'int32'/'int64' parses integers.  A value that
    is not a number, or a row of the wrong length, raises an error naming the
    file, line and column.  Keyword arguments only, as MXNet's.
    """

    def __init__(self, *args, data_csv=None, data_shape=None, label_csv="NULL",
                 label_shape=(1,), batch_size=None, round_batch=True, prefetch_buffer=4,
                 ctx="gpu", dtype=None, data_name="data", label_name="softmax_label", **kwargs):
        api = "CSVIter"
        batch_size = check_call_args(api, args, kwargs, {
            "data_csv": data_csv, "data_shape": data_shape, "batch_size": batch_size})
        data_shape = _shape(api, "data_shape", data_shape)
        label_shape = _shape(api, "label_shape", label_shape)
        dtype = check_dtype(api, dtype, "float32")
        label_files = None if label_csv in (None, "NULL") else _files(api, "label_csv", label_csv)
        loader = _csv.CSVLoader(_files(api, "data_csv", data_csv), label_files,
                                int(np.prod(data_shape)), int(np.prod(label_shape)), batch_size,
                                bool(round_batch))
        super().__init__(_CSVSource(loader, batch_size, data_shape, label_shape, dtype),
                         data_name=data_name, label_name=label_name,
                         prefetch_buffer=prefetch_buffer)
