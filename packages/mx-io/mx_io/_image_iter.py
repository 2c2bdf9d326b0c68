"""``mx.image.ImageIter``: batches of augmented images from a ``.rec`` file,
a ``.lst`` list of image files or an in-memory list (MXNet 1.9.1's).

MXNet's iterator decodes, augments and copies one image at a time through
NDArrays.  This one keeps MXNet's order of records and of random draws but
decodes a batch's images on a thread pool (OpenCV releases the GIL), runs the
augmenters on NumPy images in the calling thread (so Python's ``random``
sees MXNet's sequence of draws) and writes each image straight into the
batch's pooled array.  Subclasses that override ``imdecode``,
``check_valid_image``, ``augmentation_transform`` or ``postprocess_data``,
and augmenters that only take NDArrays, get MXNet's per-image NDArray path.
"""
import logging
import numbers
import os
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import mx_ndarray as nd
from mx_ndarray._alloc import empty

from mx_io import _image_codec, recordio
from mx_io._augmenters import CreateAugmenter, takes_numpy
from mx_io.image import imdecode
from mx_io.io.base import DataBatch, DataIter

__all__ = ["ImageIter"]

_LABEL_DTYPES = ("int32", "float32", "int64", "float64")
_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")
# The per-image hooks a subclass may override (then MXNet's NDArray path runs).
_HOOKS = ("imdecode", "check_valid_image", "augmentation_transform", "postprocess_data")


def _decode_threads():
    """MXNet's MXNET_CPU_WORKER_NTHREADS, else one thread per core (at most 4)."""
    value = os.environ.get("MXNET_CPU_WORKER_NTHREADS")
    if value is not None:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"ImageIter: MXNET_CPU_WORKER_NTHREADS must be an int, "
                             f"got {value!r}") from None
    return max(1, min(4, os.cpu_count() or 1))


def _read_imglist_file(path, dtype):
    """``.lst`` lines ``index<TAB>label...<TAB>path`` as (dict key -> (label,
    path), keys in file order)."""
    imglist, keys = {}, []
    with open(path) as fin:
        for lineno, line in enumerate(fin, 1):
            fields = line.strip().split("\t")
            try:
                if len(fields) < 2:
                    raise ValueError("fewer than 2 fields")
                key = int(fields[0])
                label = np.array(fields[1:-1], dtype=np.float64).astype(dtype)
            except ValueError as err:
                raise ValueError(f"ImageIter: line {lineno} of image list '{path}' is "
                                 f"{line.rstrip()!r}; expected 'index<TAB>label(s)<TAB>path' "
                                 f"({err})") from None
            imglist[key] = (label, fields[-1])
            keys.append(key)
    return imglist, keys


def _read_imglist(items, dtype):
    """A list of ``[label(s)..., path]`` items (keys '1', '2', ... as MXNet)."""
    imglist, keys = {}, []
    for number, item in enumerate(items, 1):
        if not isinstance(item, (list, tuple)) or len(item) < 2:
            raise ValueError(f"ImageIter: imglist item {number - 1} must be [label(s)..., "
                             f"path], got {item!r}")
        if len(item) > 2:
            label = item[:-1]
        elif isinstance(item[0], numbers.Number):
            label = [item[0]]
        else:
            label = item[0]
        imglist[str(number)] = (np.asarray(label, dtype=dtype).reshape(-1), item[-1])
        keys.append(str(number))
    return imglist, keys


class ImageIter(DataIter):
    """Image data iterator with MXNet's augmentations, from ``path_imgrec``
    (+ ``path_imgidx`` for shuffling and parts), ``path_imglist`` +
    ``path_root``, or ``imglist`` (a list of ``[label(s)..., path]``).

    Parameters
    ----------
    batch_size : int
    data_shape : tuple
        (3, height, width) of each image in a batch.
    label_width : int
        Labels per image (batches of (batch_size,) when 1, else
        (batch_size, label_width)).
    shuffle : bool
        Reorder the images at each reset (Python's ``random``, as MXNet;
        a ``.rec`` source needs ``path_imgidx``).
    part_index, num_parts : int
        This part's share of ``len // num_parts`` images (the rest are left out, as MXNet).
    aug_list : list of Augmenter, optional
        Else ``CreateAugmenter(data_shape, **kwargs)``.
    data_name, label_name : str
    dtype : str
        The dtype labels of an image list are parsed to (int32, float32,
        int64, float64); batches are float32, as MXNet's.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        'pad' fills the last batch from the start (``pad`` counts the
        filled examples); 'discard' drops it; 'roll_over' keeps its images
        for the first batch of the next epoch.
    """

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        super().__init__()
        self._check_arguments(batch_size, label_width, path_imgrec, path_imglist, imglist,
                              dtype, last_batch_handle, part_index, num_parts)
        self.check_data_shape(data_shape)
        self.imgrec, self.imgidx = self._open_records(path_imgrec, path_imgidx)
        if path_imglist:
            logging.info("ImageIter: loading image list %s...", path_imglist)
            self.imglist, keys = _read_imglist_file(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, keys = _read_imglist(imglist, dtype)
        else:
            self.imglist, keys = None, None
        self.path_root = path_root
        data_shape = tuple(int(d) for d in data_shape)
        self.provide_data = [(data_name, (batch_size,) + data_shape)]
        self.provide_label = [(label_name, (batch_size, label_width) if label_width > 1
                               else (batch_size,))]
        self.batch_size = batch_size
        self.data_shape = data_shape
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError("ImageIter: shuffle and num_parts > 1 with path_imgrec need "
                                 "path_imgidx (the .idx file)")
            self.seq = self.imgidx
        else:
            self.seq = None           # sequential reads of the .rec file
        if num_parts > 1:
            share = len(self.seq) // num_parts
            self.seq = self.seq[part_index * share:(part_index + 1) * share]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        self._where = None            # the last sample's record or file, for errors
        self._pool = None
        self.reset()

    @staticmethod
    def _check_arguments(batch_size, label_width, path_imgrec, path_imglist, imglist, dtype,
                         last_batch_handle, part_index, num_parts):
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError("ImageIter: give path_imgrec, path_imglist or imglist (a list of "
                             "[label(s)..., path])")
        if dtype not in _LABEL_DTYPES:
            raise ValueError(f"ImageIter: {dtype} label not supported (dtype must be one of "
                             f"{_LABEL_DTYPES})")
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError(f"ImageIter: argument 'last_batch_handle' must be one of "
                             f"{_LAST_BATCH_HANDLES}, got {last_batch_handle!r}")
        for name, value in (("batch_size", batch_size), ("label_width", label_width),
                            ("num_parts", num_parts)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"ImageIter: argument {name!r} must be a positive int, "
                                 f"got {value!r}")
        if not 0 <= part_index < num_parts:
            raise ValueError(f"ImageIter: part_index must be in [0, num_parts={num_parts}), "
                             f"got {part_index!r}")

    @staticmethod
    def _open_records(path_imgrec, path_imgidx):
        if not path_imgrec:
            return None, None
        logging.info("ImageIter: loading recordio %s...", path_imgrec)
        if path_imgidx:
            imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            return imgrec, list(imgrec.keys)
        return recordio.MXRecordIO(path_imgrec, "r"), None

    # --- epochs ---------------------------------------------------------------
    def reset(self):
        """Back to the first image (reshuffled when ``shuffle``); with
        'roll_over' the images the last batch kept start the next one."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Back to the first image, dropping images kept for 'roll_over'."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    # --- samples --------------------------------------------------------------
    def next_sample(self):
        """The next image's (label, encoded bytes); StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            offset = self.imgrec.tell()
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            self._where = f"record at byte offset {offset} of '{self.imgrec.uri}'"
            header, img = recordio.unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            self._where = (f"record {idx!r} (byte offset {self.imgrec.idx.get(idx)}) of "
                           f"'{self.imgrec.uri}'")
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        self._where = f"image file '{os.path.join(self.path_root or '', fname)}'"
        return label, self.read_image(fname)

    def read_image(self, fname):
        """The bytes of image file ``fname`` (under ``path_root``)."""
        path = os.path.join(self.path_root or "", fname)
        try:
            with open(path, "rb") as fin:
                return fin.read()
        except OSError as err:
            raise RuntimeError(f"ImageIter: cannot read image file '{path}': "
                               f"{err.strerror or err}") from err

    def imdecode(self, s):
        """Decodes image bytes ``s`` to an HxWxC RGB NDArray; a RuntimeError
        naming the image when they do not decode."""
        try:
            return imdecode(s)
        except Exception as err:      # what MXNet does: name the image, keep the cause
            raise RuntimeError(f"Broken image {self._where}: {err}") from err

    def check_valid_image(self, data):
        """Raises RuntimeError for an image to skip (MXNet: one without pixels)."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def augmentation_transform(self, data):
        """``data`` through every augmenter of ``auglist``."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HxWxC -> CxHxW, the layout of a batch."""
        return nd.transpose(datum, axes=(2, 0, 1))

    def check_data_shape(self, data_shape):
        """Raises ValueError unless ``data_shape`` is (3, H, W)."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    # --- batches --------------------------------------------------------------
    def _read_samples(self, count):
        """Up to ``count`` (label, bytes, where) samples; fewer at the end."""
        samples = []
        try:
            while len(samples) < count:
                label, raw = self.next_sample()
                samples.append((label, raw, self._where))
        except StopIteration:
            pass
        return samples

    def _decode_numpy(self, sample):
        _, raw, where = sample
        try:
            img = _image_codec.decode(raw, 1, caller="ImageIter")
        except Exception as err:
            raise RuntimeError(f"Broken image {where}: {err}") from err
        return _image_codec.cv2().cvtColor(img, _image_codec.cv2().COLOR_BGR2RGB)

    def _decoded(self, samples):
        """The samples' images as RGB NumPy arrays, decoded in parallel."""
        if len(samples) < 2 or _decode_threads() == 1:
            return [self._decode_numpy(s) for s in samples]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(_decode_threads(),
                                            thread_name_prefix="ImageIter-decode")
        return list(self._pool.map(self._decode_numpy, samples))

    def _ndarray_decoded(self, samples):
        images = []
        for _, raw, where in samples:
            self._where = where
            images.append(self.imdecode(raw))
        return images

    def _uses_mxnet_hooks(self):
        """Whether a subclass hook or an NDArray-only augmenter asks for
        MXNet's per-image NDArray path."""
        cls = type(self)
        return (any(getattr(cls, name) is not getattr(ImageIter, name) for name in _HOOKS)
                or not all(takes_numpy(aug) for aug in self.auglist))

    def _store(self, batch_data, i, img):
        chw = img.transpose(2, 0, 1) if isinstance(img, np.ndarray) else \
            self.postprocess_data(img).asnumpy()
        if chw.shape != batch_data.shape[1:]:
            got = "x".join(map(str, chw.shape[1:] + chw.shape[:1]))
            want = "x".join(map(str, batch_data.shape[2:] + batch_data.shape[1:2]))
            raise ValueError(f"ImageIter: an augmented image has shape {got} (HxWxC), "
                             f"data_shape asks for {want}; end aug_list with a crop or resize "
                             f"to the data shape")
        batch_data[i] = chw

    def _store_label(self, batch_label, i, label, where):
        label = np.asarray(label.asnumpy() if isinstance(label, nd.NDArray) else label)
        if label.size != self.label_width:
            raise ValueError(f"ImageIter: {where} has {label.size} label(s), label_width is "
                             f"{self.label_width}")
        batch_label[i] = label.reshape(batch_label.shape[1:])

    def _batchify(self, batch_data, batch_label, start=0):
        """Fills rows ``start``.. of the batch; returns the rows filled."""
        i = start
        ndarray_path = self._uses_mxnet_hooks()
        while i < self.batch_size:
            wanted = self.batch_size - i
            samples = self._read_samples(wanted)
            images = self._ndarray_decoded(samples) if ndarray_path else self._decoded(samples)
            for (label, _, where), img in zip(samples, images):
                try:
                    self.check_valid_image(img)
                except RuntimeError as err:
                    logging.debug("Invalid image, skipping: %s", err)
                    continue
                if ndarray_path:
                    img = self.augmentation_transform(img)
                else:
                    for aug in self.auglist:
                        img = aug(img)
                self._store(batch_data, i, img)
                self._store_label(batch_label, i, label, where)
                i += 1
            if len(samples) < wanted:
                break                 # the data ran out
        if not i:
            raise StopIteration
        return i

    def _new_batch(self):
        c, h, w = self.data_shape
        data = empty((self.batch_size, c, h, w), dtype=np.float32)
        label = empty(self.provide_label[0][1], dtype=np.float32)
        data_view, label_view = data._host_view(), label._host_view()
        data_view[...] = 0
        return data, label, data_view, label_view

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch."""
        if self._cache_data is not None:
            batch = self._cache_data
            i = self._cache_idx
        else:
            batch = self._new_batch()
            i = self._batchify(batch[2], batch[3])
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_idx = batch, i
                raise StopIteration
            self._batchify(batch[2], batch[3], i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch[0]], [batch[1]], pad=pad)

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False)
