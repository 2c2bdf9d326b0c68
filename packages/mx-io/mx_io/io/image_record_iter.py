"""ImageRecordIter and ImageRecordUInt8Iter: batches of augmented images from
an image RecordIO file (MXNet 1.9.1's iter_image_recordio_2.cc with the
default augmenter, image_aug_default.cc).

Per image, in MXNet's order: decode (OpenCV, BGR), ``resize`` the shorter
side, the affine warp (``max_rotate_angle``/``rotate``, ``max_shear_ratio``,
``min/max_random_scale``, ``max_aspect_ratio``, ``min/max_img_size``, border
``fill_value``, ``inter_method``), ``pad``, crop to ``data_shape`` (random
with ``rand_crop``, else centred), mirror (``mirror``, ``rand_mirror``),
RGB CHW, then (ImageRecordIter) ``(pixel - mean) * scale / std``.
"""
import os
import warnings
from types import SimpleNamespace

import numpy as np

from mx_ndarray.serialization import load

from mx_io.io._image_record_source import ImageRecordSource
from mx_io.io.native import MXDataIter

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter"]

# MXNet's parameters and defaults.  Those marked None in _UNSUPPORTED are
# accepted only at their default value.
_DEFAULTS = dict(
    path_imglist="", path_imgrec="", path_imgidx="", aug_seq="aug_default", label_width=1,
    data_shape=None, preprocess_threads=4, verbose=True, num_parts=1, part_index=0,
    device_id=0, shuffle_chunk_size=0, shuffle_chunk_seed=0, seed_aug=None, shuffle=False,
    seed=0, batch_size=None, round_batch=True, prefetch_buffer=4, ctx="gpu", dtype=None,
    resize=-1, rand_crop=False, random_resized_crop=False, max_rotate_angle=0,
    max_aspect_ratio=0.0, min_aspect_ratio=None, max_shear_ratio=0.0, max_crop_size=-1,
    min_crop_size=-1, max_random_scale=1.0, min_random_scale=1.0, max_random_area=1.0,
    min_random_area=1.0, max_img_size=1e10, min_img_size=0.0, brightness=0.0, contrast=0.0,
    saturation=0.0, pca_noise=0.0, random_h=0, random_s=0, random_l=0, rotate=-1,
    fill_value=255, inter_method=1, pad=0, mirror=False, rand_mirror=False, mean_img="",
    mean_r=0.0, mean_g=0.0, mean_b=0.0, mean_a=0.0, std_r=1.0, std_g=1.0, std_b=1.0,
    std_a=1.0, scale=1.0, max_random_contrast=0.0, max_random_illumination=0.0,
    data_name="data", label_name="softmax_label",
)

# Augmenters of MXNet's ImageRecordIter not built here yet: an error names
# them when set, rather than silently training on other data.
_UNSUPPORTED = ("random_resized_crop", "min_aspect_ratio", "max_crop_size", "min_crop_size",
                "max_random_area", "min_random_area", "brightness", "contrast", "saturation",
                "pca_noise", "random_h", "random_s", "random_l", "max_random_contrast",
                "max_random_illumination", "shuffle_chunk_size")

_INTER_METHODS = (0, 1, 2, 3, 4, 9, 10)


def _int(api, name, value, low=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        try:
            if isinstance(value, str) or float(value) != int(value):
                raise ValueError
            value = int(value)
        except (TypeError, ValueError):
            raise TypeError(f"{api}: argument {name!r} must be an int, got {value!r}") from None
    if low is not None and value < low:
        raise ValueError(f"{api}: argument {name!r} must be at least {low}, got {value}")
    return int(value)


def _float(api, name, value, low=None):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{api}: argument {name!r} must be a number, got {value!r}") from None
    if not np.isfinite(value) and name != "max_img_size":
        raise ValueError(f"{api}: argument {name!r} must be finite, got {value}")
    if low is not None and value < low:
        raise ValueError(f"{api}: argument {name!r} must be at least {low}, got {value}")
    return value


def _data_shape(api, value):
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{api}: argument 'data_shape' must be (channels, height, width), got "
                        f"{value!r}") from None
    if len(shape) != 3 or shape[0] not in (1, 3) or min(shape) < 1:
        raise ValueError(f"{api}: argument 'data_shape' must be (channels, height, width) with "
                         f"1 or 3 channels and positive sizes, got {value!r}")
    return shape


def _existing(api, name, path):
    if not path:
        return None
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{api}: argument {name!r}: no such file {path}")
    return path


def _label_map(api, path, label_width):
    """Image id -> labels from an im2rec ``.lst`` (index, labels..., path)."""
    labels = {}
    with open(path) as fin:
        for number, line in enumerate(fin, 1):
            fields = line.rstrip("\n").split("\t")
            if not line.strip():
                continue
            try:
                values = [float(v) for v in fields[1:-1]]
                labels[int(float(fields[0]))] = np.asarray(values, np.float32)
            except (ValueError, IndexError):
                raise ValueError(f"{api}: argument 'path_imglist' {path!r} line {number}: "
                                 f"expected 'index<TAB>label...<TAB>path', got "
                                 f"{line.strip()!r}") from None
            if len(values) < label_width:
                raise ValueError(f"{api}: argument 'path_imglist' {path!r} line {number} holds "
                                 f"{len(values)} labels, fewer than label_width={label_width}")
    return labels


def _mean_image(api, path, data_shape):
    loaded = load(path)
    arrays = list(loaded.values()) if isinstance(loaded, dict) else list(loaded)
    if len(arrays) != 1:
        raise ValueError(f"{api}: argument 'mean_img' {path!r} must hold one array, holds "
                         f"{len(arrays)}")
    mean = np.ascontiguousarray(arrays[0].asnumpy(), dtype=np.float32)
    if mean.shape != tuple(data_shape):
        raise ValueError(f"{api}: argument 'mean_img' {path!r} has shape {mean.shape}, "
                         f"data_shape is {tuple(data_shape)}")
    return mean.reshape(-1)


def parse_params(api, kwargs, uint8):
    """The checked parameters as a namespace; errors name the argument and value."""
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:     # MXNet ignores the arguments it does not know
        warnings.warn(f"{api}: ignoring unknown arguments {unknown}", stacklevel=3)
    p = dict(_DEFAULTS)
    p.update({k: v for k, v in kwargs.items() if k in _DEFAULTS})
    for name in _UNSUPPORTED:
        if p[name] != _DEFAULTS[name]:
            raise NotImplementedError(f"{api}: argument {name!r} is not supported yet "
                                      f"(got {p[name]!r}; only the default "
                                      f"{_DEFAULTS[name]!r})")
    if p["aug_seq"] != "aug_default":
        raise ValueError(f"{api}: argument 'aug_seq' must be 'aug_default', got {p['aug_seq']!r}")
    for name in ("data_shape", "batch_size"):
        if p[name] is None:
            raise TypeError(f"{api}: argument {name!r} is required")
    cfg = SimpleNamespace(**p)
    cfg.path_imgrec = _existing(api, "path_imgrec", p["path_imgrec"])
    if cfg.path_imgrec is None:
        raise ValueError(f"{api}: argument 'path_imgrec' must name a .rec file")
    cfg.path_imgidx = _existing(api, "path_imgidx", p["path_imgidx"])
    cfg.data_shape = _data_shape(api, p["data_shape"])
    cfg.batch_size = _int(api, "batch_size", p["batch_size"], 1)
    cfg.label_width = _int(api, "label_width", p["label_width"], 1)
    cfg.preprocess_threads = _int(api, "preprocess_threads", p["preprocess_threads"], 1)
    cfg.num_parts = _int(api, "num_parts", p["num_parts"], 1)
    cfg.part_index = _int(api, "part_index", p["part_index"], 0)
    if cfg.part_index >= cfg.num_parts:
        raise ValueError(f"{api}: argument 'part_index' must be below num_parts="
                         f"{cfg.num_parts}, got {cfg.part_index}")
    cfg.seed = _int(api, "seed", p["seed"]) & (2 ** 64 - 1)
    # The augmentations draw from seed_aug when given (MXNet's), else seed.
    cfg.seed_aug = (cfg.seed if p["seed_aug"] in (None, "None")
                    else _int(api, "seed_aug", p["seed_aug"]) & (2 ** 64 - 1))
    cfg.prefetch_buffer = _int(api, "prefetch_buffer", p["prefetch_buffer"], 1)
    cfg.resize = _int(api, "resize", p["resize"])
    cfg.pad = _int(api, "pad", p["pad"], 0)
    cfg.fill_value = _int(api, "fill_value", p["fill_value"])
    if not 0 <= cfg.fill_value <= 255:
        raise ValueError(f"{api}: argument 'fill_value' must be in [0, 255], got "
                         f"{cfg.fill_value}")
    cfg.inter_method = _int(api, "inter_method", p["inter_method"])
    if cfg.inter_method not in _INTER_METHODS:
        raise ValueError(f"{api}: argument 'inter_method' must be one of {_INTER_METHODS}, "
                         f"got {cfg.inter_method}")
    cfg.max_rotate_angle = _int(api, "max_rotate_angle", p["max_rotate_angle"], 0)
    cfg.rotate = _int(api, "rotate", p["rotate"])
    for name in ("max_aspect_ratio", "max_shear_ratio", "min_img_size"):
        setattr(cfg, name, _float(api, name, p[name], 0.0))
    cfg.max_img_size = _float(api, "max_img_size", p["max_img_size"], 0.0)
    cfg.min_random_scale = _float(api, "min_random_scale", p["min_random_scale"], 0.0)
    cfg.max_random_scale = _float(api, "max_random_scale", p["max_random_scale"], 0.0)
    if cfg.min_random_scale > cfg.max_random_scale:
        raise ValueError(f"{api}: argument 'min_random_scale' ({cfg.min_random_scale}) must "
                         f"not exceed max_random_scale ({cfg.max_random_scale})")
    for name in ("shuffle", "round_batch", "rand_crop", "rand_mirror", "mirror"):
        setattr(cfg, name, bool(p[name]))
    # MXNet's DefaultImageAugmenter warps only when one of these is set.
    cfg.affine = (cfg.max_rotate_angle > 0 or cfg.max_shear_ratio > 0 or cfg.rotate > 0
                  or cfg.max_random_scale != 1 or cfg.min_random_scale != 1
                  or cfg.max_aspect_ratio != 0 or cfg.max_img_size != 1e10
                  or cfg.min_img_size != 0)
    dtype = "uint8" if uint8 else ("float32" if p["dtype"] in (None, "None") else p["dtype"])
    if not isinstance(dtype, str):
        dtype = np.dtype(dtype).name
    if dtype not in ("float32", "uint8"):
        raise ValueError(f"{api}: argument 'dtype' must be None, 'float32' or 'uint8', got "
                         f"{p['dtype']!r}")
    cfg.dtype = dtype
    channels = cfg.data_shape[0]
    means = [_float(api, n, p[n]) for n in ("mean_r", "mean_g", "mean_b")][:channels]
    stds = [_float(api, n, p[n]) for n in ("std_r", "std_g", "std_b")][:channels]
    scale = _float(api, "scale", p["scale"])
    for name, value in zip(("std_r", "std_g", "std_b"), stds):
        if value == 0:
            raise ValueError(f"{api}: argument {name!r} must not be 0")
    cfg.mean = np.asarray(means, np.float32)
    cfg.mult = np.asarray([scale / s for s in stds], np.float32)
    # A mean image file that does not exist yet is computed over the data
    # and written there, as MXNet does (ImageRecordSource).
    cfg.mean_img, cfg.mean_img_path = None, None
    if p["mean_img"] and dtype == "float32":
        cfg.mean_img_path = os.fspath(p["mean_img"])
        if os.path.exists(cfg.mean_img_path):
            cfg.mean_img = _mean_image(api, cfg.mean_img_path, cfg.data_shape)
    cfg.path_imglist = _existing(api, "path_imglist", p["path_imglist"])
    cfg.label_map = (_label_map(api, cfg.path_imglist, cfg.label_width)
                     if cfg.path_imglist else None)
    return cfg


class ImageRecordIter(MXDataIter):
    """Batches of augmented images from an image RecordIO (``.rec``) file.

    ``data`` is (batch_size,) + data_shape float32 (RGB, CHW), ``label``
    (batch_size,) or (batch_size, label_width).  Records are decoded and
    augmented on ``preprocess_threads`` threads without the GIL and batches
    prepared ``prefetch_buffer`` ahead.  ``shuffle`` (needs no ``.idx``, but
    reads faster with one) draws a new order every epoch from ``seed``; the
    random augmentations of a record depend only on (seed, epoch, record),
    so the batches are the same whatever ``preprocess_threads``.
    ``num_parts``/``part_index`` read one of ``num_parts`` equal shares of
    the records.  ``round_batch`` completes the last batch from the start
    (``pad`` counts those examples; the next epoch starts after them, as in
    MXNet); without it the last batch is padded with zeros and ``pad`` counts
    them (MXNet 1.9.1 reports pad 0 there and leaves stale examples).
    ``batch.index`` holds each example's record number in the file.  A
    record that does not decode is skipped with a RuntimeWarning naming it.
    The colour and crop-size augmenters MXNet also has (brightness,
    contrast, saturation, pca_noise, random_h/s/l, random_resized_crop,
    min/max_crop_size, min/max_random_area, min_aspect_ratio,
    max_random_contrast/illumination) raise NotImplementedError when set.
    Keyword arguments only, as MXNet's.
    """

    _uint8 = False

    def __init__(self, *args, **kwargs):
        api = type(self).__name__
        if args:
            raise TypeError(f"{api} can only accept keyword arguments")
        cfg = parse_params(api, kwargs, self._uint8)
        super().__init__(ImageRecordSource(cfg), data_name=cfg.data_name,
                         label_name=cfg.label_name, prefetch_buffer=cfg.prefetch_buffer)


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter with uint8 output: the augmented RGB pixels, not
    normalised (mean, std and scale are ignored)."""

    _uint8 = True
