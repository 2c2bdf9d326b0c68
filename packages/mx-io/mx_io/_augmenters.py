"""``mx.image``'s Augmenter classes and CreateAugmenter (MXNet 1.9.1's).

Each augmenter takes an HxWxC image and returns one; random draws use
Python's ``random`` (NumPy's ``np.random`` for LightingAug's noise) in
MXNet's order, so the same seeds give MXNet's results.  The colour
augmenters work in place on float images, as MXNet's NDArray code does.

Every augmenter here also takes a NumPy image and then returns NumPy: that
is how ImageIter runs a list of them without an NDArray round trip per
step.  The arithmetic is NumPy's (OpenCV's for resizing), whole-image
vectorised; an NDArray image is read once, computed and written back.
"""
import json
import random

import numpy as np

import mx_ndarray as nd
from mx_io.image import (_deprecated_min_area, _get_interp_method, center_crop,
                         color_normalize, imresize, random_crop, random_size_crop,
                         resize_short)

__all__ = ["Augmenter", "SequentialAug", "RandomOrderAug", "ResizeAug", "ForceResizeAug",
           "RandomCropAug", "RandomSizedCropAug", "CenterCropAug", "BrightnessJitterAug",
           "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "ColorJitterAug",
           "LightingAug", "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter"]

# ITU-R 601 luma weights (MXNet's contrast/saturation grey) and the YIQ
# transforms of its hue rotation.
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114],
                        [0.596, -0.274, -0.321],
                        [0.211, -0.523, 0.311]])
_YIQ_TO_RGB = np.array([[1.0, 0.956, 0.621],
                        [1.0, -0.272, -0.647],
                        [1.0, -1.107, 1.705]])
_GRAY_MIX = np.array([[0.21, 0.21, 0.21],
                      [0.72, 0.72, 0.72],
                      [0.07, 0.07, 0.07]], dtype=np.float32)
# CreateAugmenter's ImageNet statistics.
_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                        [-0.5808, -0.0045, -0.8140],
                        [-0.5836, -0.6948, 0.4203]])
_IMAGENET_MEAN = [123.68, 116.28, 103.53]
_IMAGENET_STD = [58.395, 57.12, 57.375]


def _accepts_numpy(call):
    """Marks an augmenter's ``__call__`` as taking NumPy images too; a
    subclass that overrides ``__call__`` loses the mark (see takes_numpy)."""
    call.accepts_numpy = True
    return call


def takes_numpy(aug):
    """Whether ``aug`` can be called with a NumPy image (ImageIter's fast path)."""
    if not getattr(type(aug).__call__, "accepts_numpy", False):
        return False
    return all(takes_numpy(child) for child in getattr(aug, "ts", ()))


class Augmenter:
    """Image augmenter base class: ``aug(src)`` returns the augmented image;
    ``dumps()`` describes it as JSON (its class and arguments)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for key, value in kwargs.items():
            if isinstance(value, nd.NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                kwargs[key] = value.tolist()

    def dumps(self):
        """The augmenter as a JSON string: ``[class name in lower case, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("Must override implementation.")


class _NumpyAugmenter(Augmenter):
    """An augmenter computed by ``_apply`` on a NumPy image.  ``_in_place``
    ones write an NDArray's result back into it (MXNet's ``src *= alpha``)."""
    _in_place = False

    @_accepts_numpy
    def __call__(self, src):
        if isinstance(src, np.ndarray):
            return self._apply(src)
        host = src.asnumpy()
        out = self._apply(host)
        if self._in_place:
            src[:] = out
            return src
        if out is host:                 # nothing drawn to change (flip, grey): src itself
            return src
        return nd.array(np.ascontiguousarray(out), ctx=src.context, dtype=out.dtype)

    def _apply(self, img):
        raise NotImplementedError


def _float_image(img, caller):
    """``img`` itself, checked to be a float HxWx3 image (MXNet's colour
    augmenters fail or compute garbage on integer images)."""
    if img.dtype.kind != "f":
        raise TypeError(f"{caller}: needs a float image (put CastAug before it), "
                        f"got dtype {img.dtype}")
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"{caller}: needs an HxWx3 RGB image, got shape {img.shape}")
    return img


def _mix_channels(img, matrix):
    """Each pixel's RGB row times ``matrix`` (3xK): one BLAS call per image."""
    flat = np.ascontiguousarray(img).reshape(-1, 3)
    mixed = flat @ matrix.astype(img.dtype, copy=False)
    return mixed.reshape(img.shape[:2] + (matrix.shape[1],))


class _AugmenterList(Augmenter):
    """Augmenters ``ts`` applied one after the other."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        """``[class name, [each augmenter's dumps()]]`` (a list, as MXNet's)."""
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def _apply_all(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class SequentialAug(_AugmenterList):
    """Applies the augmenters ``ts`` in order."""

    @_accepts_numpy
    def __call__(self, src):
        return self._apply_all(src)


class RandomOrderAug(_AugmenterList):
    """Applies the augmenters ``ts`` in a random order (``random.shuffle`` of
    the list itself, as MXNet)."""

    @_accepts_numpy
    def __call__(self, src):
        random.shuffle(self.ts)
        return self._apply_all(src)


class _SizedAugmenter(Augmenter):
    """An augmenter of a target ``size`` and interpolation ``interp``."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp


class ResizeAug(_SizedAugmenter):
    """Resizes the shorter edge to ``size`` (resize_short)."""

    @_accepts_numpy
    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(_SizedAugmenter):
    """Resizes to ``size`` (width, height) whatever the aspect ratio."""

    @_accepts_numpy
    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(_SizedAugmenter):
    """A random crop of ``size`` (width, height) (random_crop)."""

    @_accepts_numpy
    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A crop of random area and aspect ratio resized to ``size``
    (random_size_crop); ``min_area`` is the deprecated name of ``area``."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        self.area = _deprecated_min_area(area, kwargs, "RandomSizedCropAug")
        self.ratio = ratio
        self.interp = interp

    @_accepts_numpy
    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(_SizedAugmenter):
    """The centred crop of ``size`` (width, height) (center_crop)."""

    @_accepts_numpy
    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(_NumpyAugmenter):
    """Scales the image by ``1 + uniform(-brightness, brightness)``."""
    _in_place = True

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def _apply(self, img):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        img = _float_image(img, "BrightnessJitterAug")
        img *= alpha
        return img


class ContrastJitterAug(_NumpyAugmenter):
    """Blends the image with its mean luma: ``alpha * img + (1 - alpha) *
    mean grey``, alpha = ``1 + uniform(-contrast, contrast)``."""
    _in_place = True

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def _apply(self, img):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        img = _float_image(img, "ContrastJitterAug")
        # MXNet: 3 * (1 - alpha) / (H*W*3) * sum of the luma-weighted channels.
        luma_sum = (img.reshape(-1, 3) @ _LUMA.astype(img.dtype)).sum(dtype=img.dtype)
        gray = img.dtype.type(3.0 * (1.0 - alpha) / img.size) * luma_sum
        img *= alpha
        img += gray
        return img


class SaturationJitterAug(_NumpyAugmenter):
    """Blends each pixel with its own luma: ``alpha * img + (1 - alpha) *
    grey``, alpha = ``1 + uniform(-saturation, saturation)``."""
    _in_place = True

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def _apply(self, img):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        img = _float_image(img, "SaturationJitterAug")
        gray = _mix_channels(img, _LUMA[:, None])           # HxWx1
        gray *= 1.0 - alpha
        img *= alpha
        img += gray
        return img


class HueJitterAug(_NumpyAugmenter):
    """Rotates the hue by ``uniform(-hue, hue) * pi`` in YIQ space (the
    linear approximation MXNet uses)."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue

    def _apply(self, img):
        alpha = random.uniform(-self.hue, self.hue)
        img = _float_image(img, "HueJitterAug")
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rotate = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        transform = (_YIQ_TO_RGB @ rotate @ _RGB_TO_YIQ).T
        return _mix_channels(img, transform)


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(_NumpyAugmenter):
    """AlexNet's PCA lighting noise: adds ``eigvec @ (alpha * eigval)`` with
    ``alpha ~ np.random.normal(0, alphastd, 3)``."""
    _in_place = True

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def _apply(self, img):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        img = _float_image(img, "LightingAug")
        rgb = np.dot(np.asarray(self.eigvec) * alpha, self.eigval)
        img += rgb.astype(img.dtype)
        return img


def _host_stat(value):
    """A mean/std argument as float32 NumPy (None stays None)."""
    if value is None:
        return None
    if isinstance(value, nd.NDArray):
        value = value.asnumpy()
    return np.asarray(value, dtype=np.float32)


class ColorNormalizeAug(_NumpyAugmenter):
    """``(img - mean) / std`` per channel, in place (color_normalize)."""
    _in_place = True

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, nd.NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, nd.NDArray) else nd.array(std)
        self._mean_np = _host_stat(mean)
        self._std_np = _host_stat(std)

    def _apply(self, img):
        if img.dtype.kind != "f":
            raise TypeError(f"ColorNormalizeAug: needs a float image (put CastAug before "
                            f"it), got dtype {img.dtype}")
        return color_normalize(img, self._mean_np, self._std_np)


class RandomGrayAug(_NumpyAugmenter):
    """With probability ``p``, every channel becomes ``0.21 R + 0.72 G + 0.07 B``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def _apply(self, img):
        if random.random() < self.p:
            img = _mix_channels(_float_image(img, "RandomGrayAug"), _GRAY_MIX)
        return img


class HorizontalFlipAug(_NumpyAugmenter):
    """With probability ``p``, mirrors the image left to right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def _apply(self, img):
        if random.random() < self.p:
            img = img[:, ::-1]
        return img


class CastAug(Augmenter):
    """Casts to ``typ`` (float32)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    @_accepts_numpy
    def __call__(self, src):
        return src.astype(self.typ)


def _checked_stat(value, default, name):
    if value is True:
        return nd.array(default)
    if value is None or value is False:
        return None
    if not isinstance(value, (np.ndarray, nd.NDArray)) or value.shape[0] not in (1, 3):
        raise ValueError(f"CreateAugmenter: argument {name!r} must be True, None or a NumPy "
                         f"array/NDArray of 1 or 3 values, got {value!r}")
    return value


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """MXNet's standard augmenter list for output ``data_shape`` (C, H, W):
    resize (shorter edge) > 0, random sized crop (``rand_resize``, needs
    ``rand_crop``) / random crop / centre crop, mirror, cast to float32,
    colour jitter, hue, PCA noise, random grey, then normalisation (``mean``
    / ``std`` True for ImageNet's values)."""
    if len(data_shape) != 3:
        raise ValueError(f"CreateAugmenter: data_shape must be (C, H, W), got {data_shape!r}")
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize=True needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    mean = _checked_stat(mean, _IMAGENET_MEAN, "mean")
    std = _checked_stat(std, _IMAGENET_STD, "std")
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
