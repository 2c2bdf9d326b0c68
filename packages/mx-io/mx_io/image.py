"""``mx.image``'s array functions: decode, read, resize and crop images as
NDArrays (HxWxC, RGB by default), as MXNet 1.9.1's do.

Decoding and resizing go through OpenCV (``_image_codec``), which MXNet's
``_cvimdecode``/``_cvimresize`` operators called too; the crops are NDArray
slices.  Interpolation codes are MXNet's: 0 nearest, 1 bilinear, 2 bicubic,
3 area, 4 Lanczos; 9 picks one from the sizes (cubic up, area down, else
bilinear); 10 picks one of 0-4 at random.
"""
import numbers
import random
import warnings

import numpy as np

import mx_ndarray as nd
from mx_io import _image_codec

__all__ = ["imdecode", "imread", "imresize", "scale_down", "resize_short", "fixed_crop",
           "center_crop", "random_crop", "random_size_crop", "color_normalize"]


def _to_ndarray(img, dtype, out, ctx=None):
    """``img`` (HxW or HxWxC NumPy) as an HxWxC NDArray, into ``out`` if given."""
    if img.ndim == 2:
        img = img[:, :, None]
    if out is None:
        return nd.array(img, ctx=ctx, dtype=dtype)
    if tuple(out.shape) != img.shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the image {img.shape}")
    out[:] = img
    return out


def _decoded(data, flag, to_rgb, caller, out):
    img = _image_codec.decode(data, flag, caller=caller)
    if to_rgb and img.ndim == 3 and img.shape[2] >= 3:
        img = np.concatenate([img[:, :, 2::-1], img[:, :, 3:]], axis=2)   # BGR(A) -> RGB(A)
    return _to_ndarray(img, np.uint8, out)


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decodes an image file's bytes to an HxWxC uint8 NDArray.

    Parameters
    ----------
    buf : bytes, bytearray, numpy.ndarray or NDArray
        The encoded image (JPEG, PNG, ...).
    flag : int
        1 colour (3 channels), 0 grayscale (1 channel), -1 as stored.
    to_rgb : bool
        Channels in RGB order (MXNet's default) instead of OpenCV's BGR.
    out : NDArray, optional
        Where to write the result.
    """
    if isinstance(buf, nd.NDArray):
        data = buf.asnumpy().astype(np.uint8, copy=False).ravel()
    elif isinstance(buf, (bytes, bytearray)):
        data = np.frombuffer(buf, dtype=np.uint8)
    elif isinstance(buf, np.ndarray):
        data = buf.astype(np.uint8, copy=False).ravel()
    else:
        raise ValueError(f"imdecode: buf must be bytes, bytearray, numpy.ndarray or NDArray, "
                         f"got {type(buf).__name__}; convert a str to bytes first")
    return _decoded(data, flag, to_rgb, "imdecode", out)


def imread(filename, flag=1, to_rgb=1, out=None):
    """Reads and decodes the image file ``filename`` (see imdecode)."""
    with open(filename, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8)
    return _decoded(data, flag, to_rgb, f"imread('{filename}')", out)


def imresize(src, w, h, interp=1, out=None):
    """``src`` (HxWxC NDArray) resized to width ``w`` and height ``h`` with
    interpolation ``interp`` (0-4).  A NumPy ``src`` gives a NumPy result
    (the augmenters' and ImageIter's path, without an NDArray round trip)."""
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"imresize: interp must be 0-4 (nearest, bilinear, bicubic, area, "
                         f"Lanczos), got {interp!r}")
    if len(src.shape) != 3:
        raise ValueError(f"imresize: src must be HxWxC, got shape {tuple(src.shape)}")
    if w <= 0 or h <= 0:
        raise ValueError(f"imresize: size must be positive, got w={w}, h={h}")
    cv2 = _image_codec.cv2()
    if isinstance(src, np.ndarray):
        # OpenCV takes no negative strides (a mirrored view).
        resized = cv2.resize(np.ascontiguousarray(src), (int(w), int(h)), interpolation=interp)
        return resized[:, :, None] if resized.ndim == 2 else resized
    img = src.asnumpy()
    resized = cv2.resize(img, (int(w), int(h)), interpolation=interp)
    return _to_ndarray(resized, img.dtype, out, ctx=src.context)


def scale_down(src_size, size):
    """``size`` (w, h) shrunk, keeping its aspect ratio, to fit inside
    ``src_size`` (w, h); as ints."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _get_interp_method(interp, sizes=()):
    """MXNet's interpolation choice: 9 by sizes (old h, old w, new h, new w),
    10 at random, else ``interp`` itself (0-4)."""
    if interp == 9:
        if not sizes:
            return 2
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp} (expected 0-4, 9 or 10)")
    return interp


def resize_short(src, size, interp=2):
    """``src`` resized so that its shorter edge is ``size``."""
    h, w = src.shape[0], src.shape[1]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The ``w`` x ``h`` region of ``src`` at (``x0``, ``y0``), resized to
    ``size`` (w, h) if given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1],
                       interp=_get_interp_method(interp, (h, w, size[1], size[0])))
    return out


def center_crop(src, size, interp=2):
    """The centred crop of ``src`` with the aspect ratio of ``size``, resized
    to ``size``; returns (crop, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src, size, interp=2):
    """A crop of ``src`` at a random place (Python's ``random``) with the
    aspect ratio of ``size``, resized to it; returns (crop, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A crop of random area (fraction ``area``, a number or (min, max)) and
    aspect ratio (log-uniform in ``ratio``), resized to ``size``; ten tries,
    then center_crop.  Returns (crop, (x0, y0, w, h)).  ``min_area`` is the
    deprecated name of ``area``."""
    h, w = src.shape[0], src.shape[1]
    area = _deprecated_min_area(area, kwargs, "random_size_crop")
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * h * w
        new_ratio = np.exp(random.uniform(np.log(ratio[0]), np.log(ratio[1])))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def _deprecated_min_area(area, kwargs, caller):
    """``area``, or the deprecated ``min_area`` keyword (with MXNet's warning)."""
    if "min_area" in kwargs:
        warnings.warn("`min_area` is deprecated. Please use `area` instead.",
                      DeprecationWarning, stacklevel=3)
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError(f"{caller}: unexpected keyword arguments {sorted(kwargs)}")
    return area


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` in place on ``src`` (a float NDArray), as MXNet."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


# The augmenters and ImageIter build on the functions above (imported last:
# they import this module).
from mx_io._augmenters import *  # noqa: E402,F401,F403
from mx_io._augmenters import __all__ as _augmenter_names  # noqa: E402
from mx_io._image_iter import ImageIter  # noqa: E402,F401

__all__ += _augmenter_names + ["ImageIter"]
