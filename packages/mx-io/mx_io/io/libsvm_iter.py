"""LibSVMIter: CSR batches of the lines of LibSVM files (MXNet 1.9.1's LibSVMIter)."""
import os

import numpy as np

from mx_engine import cpu
from mx_ndarray.sparse import _from_components

from mx_io.io import _libsvm
from mx_io.io.csv_iter import _files, _shape
from mx_io.io.native import (MXDataIter, batch_of, check_call_args, check_dtype,
                             new_batch_array)

__all__ = ["LibSVMIter"]

_API = "LibSVMIter"


def _next_line_start(f, offset):
    """dmlc's LineSplitter.SeekRecordBegin: the offset after the end of the
    line holding ``offset`` (and after any further line ends)."""
    f.seek(offset)
    seen_end = False
    while True:
        chunk = f.read(1 << 16)
        if not chunk:
            return offset
        for i, c in enumerate(chunk):
            if c in b"\r\n":
                seen_end = True
            elif seen_end:
                return offset + i
        offset += len(chunk)


def part_ranges(files, num_parts, part_index):
    """The ``(path, begin, end)`` byte ranges of part ``part_index`` of
    ``num_parts`` of the files taken as one stream, split as dmlc's
    InputSplit does: equal byte steps, each boundary inside a file moved to
    the start of the next line (so parts may be uneven)."""
    sizes = [os.path.getsize(f) for f in files]
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    total = starts[-1]
    step = (total + num_parts - 1) // num_parts
    begin, end = (min(step * k, total) for k in (part_index, part_index + 1))

    def to_line_start(offset):
        if offset in starts:
            return offset
        k = max(i for i, s in enumerate(starts) if s <= offset)
        with open(files[k], "rb") as f:
            return starts[k] + _next_line_start(f, offset - starts[k])

    begin, end = to_line_start(begin), to_line_start(end)
    ranges = []
    for path, lo, size in zip(files, starts, sizes):
        b, e = max(begin, lo), min(end, lo + size)
        if b < e:
            ranges.append((path, b - lo, e - lo))
    return ranges


def _csr(parts, columns):
    """A CSRNDArray of the parsed (fresh) components, without copying them."""
    values, indices, indptr = parts
    return _from_components("csr", (indptr.shape[0] - 1, columns), values.dtype, cpu(), values,
                            [indptr, indices])


class _LibSVMSource:
    def __init__(self, loader, data_columns, label_columns, label_is_csr):
        self._loader = loader
        self._data_columns = data_columns
        self._label_columns = label_columns
        self._label_is_csr = label_is_csr

    def reset(self):
        self._loader.before_first()

    def next_batch(self):
        got = self._loader.next_batch()
        if got is None:
            raise StopIteration
        data, label, index, pad = got
        data = _csr(data, self._data_columns)
        if self._label_is_csr:
            label = _csr(label, self._label_columns)
        else:
            dense, view = new_batch_array(label.shape, "float32")
            view[...] = label
            label = dense
        return batch_of(data, label, pad, index)


class LibSVMIter(MXDataIter):
    """CSR batches of the lines of a LibSVM file (or of every file in a
    directory): ``label[:weight] [qid:n] index:value ...`` with zero-based
    indices below ``data_shape[0]``, as MXNet's.

    The data is a CSRNDArray of ``(batch_size,) + data_shape``; the label is
    a dense array of the lines' labels, or, with ``label_libsvm``, a
    CSRNDArray of ``(batch_size,) + label_shape`` from that file's features.
    Only ``round_batch=True`` exists (as MXNet): the last batch is completed
    from the start of the data and the next epoch goes on after the rows it
    took.  ``num_parts``/``part_index`` read one byte-range part of the
    data (dmlc's split: parts may be uneven).  A malformed line (a value or
    label that is not a number, a pair without ':', an index out of
    ``data_shape``) raises an error naming the file, line and column.
    Keyword arguments only, as MXNet's.
    """

    def __init__(self, *args, data_libsvm=None, data_shape=None, label_libsvm="NULL",
                 label_shape=(1,), num_parts=1, part_index=0, batch_size=None,
                 round_batch=True, prefetch_buffer=4, ctx="gpu", dtype=None, data_name="data",
                 label_name="softmax_label", **kwargs):
        batch_size = check_call_args(_API, args, kwargs, {
            "data_libsvm": data_libsvm, "data_shape": data_shape, "batch_size": batch_size})
        if not round_batch:
            raise ValueError(f"{_API}: round_batch=False is not supported (MXNet's sparse "
                             "batch loader has only round_batch=True)")
        num_parts, part_index = int(num_parts), int(part_index)
        if num_parts < 1 or not 0 <= part_index < num_parts:
            raise ValueError(f"{_API}: part_index must be in [0, num_parts), got "
                             f"part_index={part_index}, num_parts={num_parts}")
        data_shape = _shape(_API, "data_shape", data_shape)
        label_shape = _shape(_API, "label_shape", label_shape)
        for name, shape in (("data_shape", data_shape), ("label_shape", label_shape)):
            if len(shape) != 1:
                raise ValueError(f"{_API}: argument {name!r} must be 1-D, got {shape}")
        if check_dtype(_API, dtype, "float32") != "float32":
            raise ValueError(f"{_API}: argument 'dtype' must be None or 'float32' (MXNet 1.9.1's "
                             f"LibSVMIter fails on any other), got {dtype!r}")
        data_ranges = part_ranges(_files(_API, "data_libsvm", data_libsvm), num_parts,
                                  part_index)
        label_ranges = None
        if label_libsvm not in (None, "NULL"):
            label_ranges = part_ranges(_files(_API, "label_libsvm", label_libsvm), num_parts,
                                       part_index)
        elif label_shape != (1,):
            raise ValueError(f"{_API}: label_shape must be (1,) without label_libsvm (one label "
                             f"per line), got {label_shape}")
        loader = _libsvm.LibSVMLoader(data_ranges, label_ranges, data_shape[0], label_shape[0],
                                      batch_size)
        source = _LibSVMSource(loader, data_shape[0], label_shape[0], label_ranges is not None)
        super().__init__(source, data_name=data_name, label_name=label_name,
                         prefetch_buffer=prefetch_buffer)
