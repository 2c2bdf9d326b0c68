"""ImageRecordIter's batch maker: reads records in (shuffled) order, decodes
and augments them on ``preprocess_threads`` threads into a pooled batch.

Per image: the IRHeader is parsed, OpenCV's imdecode (which releases the GIL)
decodes, OpenCV's resize/warpAffine (also without the GIL) apply the
optional resize and rotate/shear/scale/aspect warp with MXNet's formulas
(image_aug_default.cc), and one nogil call (``_image_aug.pack``) pads, crops,
mirrors, swaps BGR to RGB, normalises and writes the batch slot.  Random
draws come from (seed, epoch, record number) only, so a batch is the same
whatever the thread count.
"""
import itertools
import math
import os
import struct
import warnings
import weakref
import concurrent.futures
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mx_ndarray.ndarray import array
from mx_ndarray.serialization import save

from mx_io import _image_codec
from mx_io._recordio import RecordReader
from mx_io.io import _image_aug
from mx_io.io.native import batch_of, new_batch_array

_HEADER = struct.Struct("<IfQQ")    # flag, label, id, id2 (mx.recordio.IRHeader)

# Columns of the per-image uniform draws.
CROP_Y, CROP_X, MIRROR, SHEAR, ANGLE, SCALE, ASPECT, INTER_RESIZE, INTER_WARP = range(9)
N_DRAWS = 9


def record_offsets(reader, path_imgidx):
    """Byte offsets of every record, in file order: from the ``.idx`` when
    given, else by reading the file through once."""
    if path_imgidx:
        offsets = []
        with open(path_imgidx) as fin:
            for number, line in enumerate(fin, 1):
                fields = line.split("\t")
                if not line.strip():
                    continue
                try:
                    offsets.append(int(fields[1]))
                except (IndexError, ValueError):
                    raise ValueError(f"ImageRecordIter: path_imgidx {path_imgidx!r} line "
                                     f"{number}: expected 'key<TAB>offset', got {line.strip()!r}"
                                     ) from None
        return np.unique(np.asarray(offsets, dtype=np.int64))
    offsets = []
    reader.seek(0)
    while True:
        position = reader.tell()
        if reader.read() is None:
            break
        offsets.append(position)
    return np.asarray(offsets, dtype=np.int64)


def shard(offsets, file_size, num_parts, part_index, indexed):
    """Records [begin, end) of part ``part_index`` of ``num_parts``, split as
    dmlc-core splits for MXNet: with an ``.idx``, ceil(count / num_parts)
    records a part; without, the file's bytes in equal 4-aligned ranges,
    each record going to the range its first byte falls in."""
    count = len(offsets)
    if indexed:
        step = (count + num_parts - 1) // num_parts
        return min(part_index * step, count), min((part_index + 1) * step, count)
    step = (file_size + num_parts - 1) // num_parts
    step = (step + 3) // 4 * 4
    begin, end = np.searchsorted(offsets, [part_index * step, (part_index + 1) * step])
    return int(begin), int(end)


def interpolation(method, old_w, old_h, new_w, new_h, draw):
    """OpenCV interpolation flag for MXNet's inter_method (GetInterMethod):
    9 picks by direction, 10 picks one of 0-4 at random."""
    if method == 9:
        if new_w > old_w and new_h > old_h:
            return 2            # cubic to enlarge
        if new_w < old_w and new_h < old_h:
            return 3            # area to shrink
        return 1
    if method == 10:
        return min(int(draw * 5), 4)
    return method


class ImageRecordSource:
    """reset()/next_batch() for MXDataIter; ``cfg`` is the iterator's
    checked parameters (image_record_iter.parse_params)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self._cv2 = _image_codec.cv2()
        self._reader = RecordReader(cfg.path_imgrec)
        offsets = record_offsets(self._reader, cfg.path_imgidx)
        begin, end = shard(offsets, os.path.getsize(cfg.path_imgrec), cfg.num_parts,
                           cfg.part_index, bool(cfg.path_imgidx))
        self._offsets = offsets[begin:end]
        self._numbers = np.arange(begin, end, dtype=np.int64)   # record numbers in the file
        if not len(self._offsets):
            raise ValueError(f"ImageRecordIter: part {cfg.part_index} of {cfg.num_parts} of "
                             f"{cfg.path_imgrec!r} holds no record ({len(offsets)} in the file)")
        c, h, w = cfg.data_shape
        self._slot = c * h * w
        self._data_shape = (cfg.batch_size, c, h, w)
        self._label_shape = ((cfg.batch_size,) if cfg.label_width == 1
                             else (cfg.batch_size, cfg.label_width))
        self._imread_flag = 0 if c == 1 else 1
        self._pool = None
        if cfg.preprocess_threads > 1:
            self._pool = ThreadPoolExecutor(cfg.preprocess_threads - 1,
                                            thread_name_prefix="ImageRecordIter-decode")
            weakref.finalize(self, self._pool.shutdown, wait=False)
        self._epoch = 0
        self._resume, self._wrapped = 0, False
        if cfg.mean_img_path and cfg.mean_img is None:
            cfg.mean_img = self._write_mean_image(cfg.mean_img_path)
        self._start_epoch()

    def _write_mean_image(self, path):
        """The mean of every augmented image (uint8 pixels, before
        normalisation) of this part, saved to ``path`` as MXNet's
        ``{'mean_img': array}``; returned flat."""
        cfg = self.cfg
        images = np.empty(cfg.batch_size * self._slot, np.uint8)
        labels = np.empty((cfg.batch_size, cfg.label_width), np.float32)
        index = np.empty(cfg.batch_size, np.uint64)
        total, count = np.zeros(self._slot, np.float64), 0
        for start in range(0, len(self._offsets), cfg.batch_size):
            positions = np.arange(start, min(start + cfg.batch_size, len(self._offsets)))
            filled = self._fill(0, positions, images, labels, index)
            total += images[:filled * self._slot].reshape(filled, self._slot).sum(axis=0)
            count += filled
        if not count:
            raise ValueError(f"ImageRecordIter: cannot compute mean_img {path!r}: no image of "
                             f"{cfg.path_imgrec!r} decodes")
        mean = (total / count).astype(np.float32)
        save(path, {"mean_img": array(mean.reshape(cfg.data_shape))})
        return mean

    # -- epochs and order -------------------------------------------------

    def _epoch_order(self, epoch):
        count = len(self._offsets)
        if self.cfg.shuffle:
            return np.random.default_rng([self.cfg.seed, epoch]).permutation(count)
        return np.arange(count)

    def _start_epoch(self):
        self._order, self._cursor = self._epoch_order(self._epoch), 0
        self._finished = False

    def reset(self):
        self._epoch += 1
        if self._wrapped:
            # MXNet completes the last batch from the next epoch's order and
            # that epoch goes on after the records it took.
            self._cursor, self._finished, self._wrapped = self._resume, False, False
        else:
            self._start_epoch()

    # -- batches ----------------------------------------------------------

    def next_batch(self):
        if self._finished:
            raise StopIteration
        cfg = self.cfg
        data, data_view = new_batch_array(self._data_shape, cfg.dtype)
        label, label_view = new_batch_array(self._label_shape, "float32")
        labels = label_view.reshape(cfg.batch_size, cfg.label_width)
        index = np.zeros(cfg.batch_size, dtype=np.uint64)
        filled, pad, wrapped = 0, 0, False
        while filled < cfg.batch_size:
            positions = self._order[self._cursor:self._cursor + cfg.batch_size - filled]
            if not len(positions):
                if filled == 0:
                    raise StopIteration
                if wrapped:
                    raise ValueError(f"ImageRecordIter: {cfg.path_imgrec!r} holds fewer "
                                     f"readable images than batch_size={cfg.batch_size}")
                pad = cfg.batch_size - filled
                if not cfg.round_batch:
                    data_view[filled * self._slot:] = 0
                    labels[filled:] = 0
                    break
                wrapped, self._cursor = True, 0
                self._order = self._epoch_order(self._epoch + 1)
                continue
            self._cursor += len(positions)
            filled = self._fill(filled, positions, data_view, labels, index)
        if wrapped or self._cursor >= len(self._order):
            self._finished, self._wrapped, self._resume = True, wrapped, self._cursor
        return batch_of(data, label, pad, index)

    def _fill(self, first, positions, data_view, labels, index):
        """Decodes the records at ``positions`` into slots first, first+1, ...;
        records that do not decode are skipped (a warning names each) and the
        good ones moved down over them.  Returns the slots now filled."""
        numbers = self._numbers[positions]
        records = []
        for position in positions:
            self._reader.seek(int(self._offsets[position]))
            records.append(self._reader.read())
        draws = _image_aug.uniform_draws(self.cfg.seed_aug, self._epoch,
                                         np.ascontiguousarray(numbers, dtype=np.int64), N_DRAWS)
        jobs = [(first + i, records[i], draws[i], int(numbers[i]), int(self._offsets[p]))
                for i, p in enumerate(positions)]
        ok = self._run(jobs, data_view, labels)
        filled = first
        for i, good in enumerate(ok):
            slot = first + i
            if not good:
                continue
            if slot != filled:      # close the gap a skipped record left
                data_view[filled * self._slot:(filled + 1) * self._slot] = \
                    data_view[slot * self._slot:(slot + 1) * self._slot]
                labels[filled] = labels[slot]
            index[filled] = numbers[i]
            filled += 1
        return filled

    def _run(self, jobs, data_view, labels):
        """Runs the jobs on the pool's threads and this one; each thread takes
        the next job when it finishes one, so a thread slowed by a busy
        machine does not hold the batch back."""
        ok = [False] * len(jobs)
        taken = itertools.count()
        futures = [] if self._pool is None else [
            self._pool.submit(self._work, taken, jobs, ok, data_view, labels)
            for _ in range(min(self.cfg.preprocess_threads - 1, len(jobs) - 1))]
        try:
            self._work(taken, jobs, ok, data_view, labels)
        finally:        # never leave a thread writing into a batch being dropped
            concurrent.futures.wait(futures)
        for future in futures:
            future.result()
        return ok

    def _work(self, taken, jobs, ok, data_view, labels):
        # next() of an itertools.count is atomic under the GIL.
        while (i := next(taken)) < len(jobs):
            ok[i] = self._process(jobs[i], data_view, labels)

    def _process(self, job, data_view, labels):
        slot, record, draws, number, offset = job
        cfg = self.cfg
        flag, label, image_id, _ = (_HEADER.unpack_from(record) if len(record) >= _HEADER.size
                                    else (0, 0.0, 0, 0))
        start = _HEADER.size + 4 * flag
        img = None
        if len(record) > start:
            try:
                img = self._cv2.imdecode(np.frombuffer(record, np.uint8, offset=start),
                                         self._imread_flag)
            except self._cv2.error:
                img = None
        if img is None:
            warnings.warn(f"ImageRecordIter: skipping record {number} (byte offset {offset}) of "
                          f"{cfg.path_imgrec!r}: its {max(len(record) - start, 0)} image bytes do "
                          f"not decode", RuntimeWarning, stacklevel=2)
            return False
        self._write_label(labels, slot, record, flag, label, image_id, number)
        img = self._warp(img, draws)
        if img.ndim == 2:
            img = img.reshape(img.shape[0], img.shape[1], 1)
        c, h, w = cfg.data_shape
        room_y = img.shape[0] + 2 * cfg.pad - h
        room_x = img.shape[1] + 2 * cfg.pad - w
        if room_y < 0 or room_x < 0:
            raise ValueError(f"ImageRecordIter: record {number} (byte offset {offset}) of "
                             f"{cfg.path_imgrec!r} is {img.shape[0]}x{img.shape[1]} after "
                             f"resize/augmentation (pad {cfg.pad}), smaller than data_shape "
                             f"{cfg.data_shape}")
        if cfg.rand_crop:
            crop_y = min(int(draws[CROP_Y] * (room_y + 1)), room_y)
            crop_x = min(int(draws[CROP_X] * (room_x + 1)), room_x)
        else:
            crop_y, crop_x = room_y // 2, room_x // 2
        mirror = cfg.mirror or (cfg.rand_mirror and draws[MIRROR] < 0.5)
        _image_aug.pack(img, data_view, slot, c, h, w, crop_y, crop_x, cfg.pad,
                        cfg.fill_value, mirror, cfg.mean, cfg.mult, cfg.mean_img)
        return True

    def _write_label(self, labels, slot, record, flag, label, image_id, number):
        cfg = self.cfg
        if cfg.label_map is not None:
            values = cfg.label_map.get(image_id)
            if values is None:
                raise ValueError(f"ImageRecordIter: record {number} has image id {image_id}, "
                                 f"which path_imglist {cfg.path_imglist!r} does not list")
        elif flag == 0:
            values = (label,)
        else:
            values = np.frombuffer(record, np.float32, flag, _HEADER.size)
        if cfg.label_map is None and len(values) != cfg.label_width:     # MXNet checks the same
            raise ValueError(f"ImageRecordIter: record {number} of {cfg.path_imgrec!r} holds "
                             f"{len(values)} labels but label_width is {cfg.label_width}")
        labels[slot] = values[:cfg.label_width]

    def _warp(self, img, draws):
        """MXNet's resize, then its rotate/shear/scale/aspect affine warp."""
        cfg, cv2 = self.cfg, self._cv2
        if cfg.resize > 0:
            rows, cols = img.shape[:2]
            if rows > cols:
                new_h, new_w = cfg.resize * rows // cols, cfg.resize
            else:
                new_h, new_w = cfg.resize, cfg.resize * cols // rows
            method = interpolation(cfg.inter_method, cols, rows, new_w, new_h,
                                   draws[INTER_RESIZE])
            img = cv2.resize(img, (new_w, new_h), interpolation=method)
        if not cfg.affine:
            return img
        return self._affine(img, draws)

    def _affine(self, img, draws):
        cfg, cv2 = self.cfg, self._cv2
        rows, cols = img.shape[:2]
        shear = cfg.max_shear_ratio * (draws[SHEAR] * 2 - 1)
        span = 2 * cfg.max_rotate_angle + 1
        angle = -cfg.max_rotate_angle + min(int(draws[ANGLE] * span), span - 1)
        if cfg.rotate > 0:
            angle = cfg.rotate
        a, b = math.cos(angle / 180.0 * math.pi), math.sin(angle / 180.0 * math.pi)
        scale = draws[SCALE] * (cfg.max_random_scale - cfg.min_random_scale) + cfg.min_random_scale
        ratio = draws[ASPECT] * cfg.max_aspect_ratio * 2 - cfg.max_aspect_ratio + 1
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        new_w = int(max(cfg.min_img_size, min(cfg.max_img_size, scale * cols)))
        new_h = int(max(cfg.min_img_size, min(cfg.max_img_size, scale * rows)))
        m = np.empty((2, 3), np.float32)
        m[0, 0], m[0, 1] = hs * a - shear * b * ws, hs * b + shear * a * ws
        m[1, 0], m[1, 1] = -b * ws, a * ws
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        if new_w < 1 or new_h < 1:      # scaled to nothing: all border (OpenCV refuses)
            return img[:max(new_h, 0), :max(new_w, 0)]
        method = interpolation(cfg.inter_method, cols, rows, new_w, new_h, draws[INTER_WARP])
        fill = (cfg.fill_value,) * 3
        return cv2.warpAffine(img, m, (new_w, new_h), flags=method,
                              borderMode=cv2.BORDER_CONSTANT, borderValue=fill)
