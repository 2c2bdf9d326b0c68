"""MNISTIter: batches of an MNIST-format (idx) image file and its labels
(MXNet 1.9.1's MNISTIter)."""
import gzip
import logging
import os
import struct
import warnings

import numpy as np

from mx_engine.base import MXNetError

from mx_io.io import _mnist, _rows
from mx_io.io.native import MXDataIter, batch_of, check_dtype, new_batch_array

__all__ = ["MNISTIter"]

_IMAGE_MAGIC, _LABEL_MAGIC = 2051, 2049


class IdxFormatError(MXNetError, ValueError):
    """A file that is not the idx file MNISTIter was told of."""


def _read(path):
    """The bytes of ``path``, gunzipped when it is gzip (MXNet reads only
    plain files; the downloads are .gz)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as err:
        raise FileNotFoundError(f"MNISTIter: cannot read {path}: {err.strerror}") from err
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise IdxFormatError(f"MNISTIter: {path}: broken gzip data: {err}") from err
    return raw


def _parse(path, raw, magic, ndim):
    """(dims, payload offset) of an idx file of unsigned bytes."""
    header = 4 * (1 + ndim)
    if len(raw) < header:
        raise IdxFormatError(f"MNISTIter: {path}: truncated idx header: {len(raw)} bytes, "
                             f"{header} needed")
    found, *dims = struct.unpack(f">{1 + ndim}I", raw[:header])
    if found != magic:
        raise IdxFormatError(f"MNISTIter: {path}: magic number {found} at byte 0, expected "
                             f"{magic} (an idx file of {ndim}-D unsigned bytes)")
    need = header + int(np.prod(dims, dtype=np.int64))
    if len(raw) < need:
        raise IdxFormatError(f"MNISTIter: {path}: truncated: dims {tuple(dims)} need {need} "
                             f"bytes, the file ends at byte {len(raw)}")
    return dims, header


def _part(count, num_parts, part_index):
    # MXNet's split of `count` examples, computed in double.
    start = int(count / num_parts * part_index)
    end = int(count / num_parts * (part_index + 1))
    return start, end


class _MNISTSource:
    def __init__(self, images, labels, batch_size, flat, dtype):
        self._count = labels.shape[0]
        rows, cols = images.shape[1:]
        self._images = images.reshape(self._count, rows * cols).view(np.uint8)
        self._labels = labels.reshape(-1, 1).view(np.uint8)
        self._batch_size = batch_size
        self._shape = (batch_size, rows * cols) if flat else (batch_size, 1, rows, cols)
        self._dtype = dtype
        self._loc = 0

    def reset(self):
        self._loc = 0

    def next_batch(self):
        loc, bs = self._loc, self._batch_size
        if loc + bs > self._count:      # only whole batches, as MXNet
            raise StopIteration
        data, view = new_batch_array(self._shape, "float32")
        _rows.copy_rows(self._images, loc, view.view(np.uint8).reshape(bs, -1))
        label, view = new_batch_array((bs,), "float32")
        _rows.copy_rows(self._labels, loc, view.view(np.uint8).reshape(bs, -1))
        self._loc = loc + bs
        if self._dtype != "float32":
            data, label = data.astype(self._dtype), label.astype(self._dtype)
        return batch_of(data, label, 0, np.zeros(bs, dtype=np.uint64))


class MNISTIter(MXDataIter):
    """Batches of MNIST images (N, 1, rows, cols), or (N, rows*cols) with
    ``flat``, scaled by 1/256, with their labels as float32 (N,).

    ``shuffle`` (default True) reorders the examples once, with ``seed``, in
    the order MXNet 1.9.1 gives for that seed; ``num_parts``/``part_index``
    keep one contiguous part for distributed training.  Only whole batches
    are returned.  Files may be gzip-compressed.  A wrong magic number or a
    truncated file raises an error naming the file and byte offset.
    """

    def __init__(self, *args, image="./train-images-idx3-ubyte",
                 label="./train-labels-idx1-ubyte", batch_size=128, shuffle=True, flat=False,
                 seed=0, silent=False, num_parts=1, part_index=0, prefetch_buffer=4, ctx="gpu",
                 dtype=None, input_shape=None, data_name="data", label_name="softmax_label",
                 **kwargs):
        api = "MNISTIter"
        if args:
            raise TypeError(f"{api} can only accept keyword arguments")
        if kwargs:      # MXNet ignores the arguments it does not know
            warnings.warn(f"{api}: ignoring unknown arguments {sorted(kwargs)}", stacklevel=2)
        if isinstance(batch_size, bool) or int(batch_size) < 1:
            raise ValueError(f"{api}: argument 'batch_size' must be a positive int, "
                             f"got {batch_size!r}")
        if not 0 <= int(part_index) < int(num_parts):
            raise ValueError(f"{api}: part_index must lie in [0, num_parts={num_parts}), "
                             f"got {part_index}")
        dtype = check_dtype(api, dtype, "float32")
        raw_images, raw_labels = _read(image), _read(label)
        (count, rows, cols), img_at = _parse(image, raw_images, _IMAGE_MAGIC, 3)
        (label_count,), label_at = _parse(label, raw_labels, _LABEL_MAGIC, 1)
        if label_count != count:
            raise IdxFormatError(f"{api}: {image} holds {count} images but {label} "
                                 f"{label_count} labels")
        start, end = _part(count, int(num_parts), int(part_index))
        unit = rows * cols
        order = _mnist.example_order(end - start, int(seed), bool(shuffle))
        pixels = np.frombuffer(raw_images, np.uint8, (end - start) * unit, img_at + start * unit)
        images = np.empty((end - start, rows, cols), np.float32)
        _mnist.gather_scaled(pixels, unit, order, images.reshape(-1))
        labels = np.frombuffer(raw_labels, np.uint8, end - start, label_at + start)
        labels = labels[order].astype(np.float32)
        if not silent:
            shape = (int(batch_size), unit) if flat else (int(batch_size), 1, rows, cols)
            logging.info("MNISTIter: load %d images, shuffle=%d, shape=%s", end - start,
                         bool(shuffle), shape)
        super().__init__(_MNISTSource(images, labels, int(batch_size), bool(flat), dtype),
                         data_name=data_name, label_name=label_name,
                         prefetch_buffer=prefetch_buffer)
