"""MXNet 1.x's module-level NDArray helpers that are not operators
(python/mxnet/ndarray/ndarray.py): moveaxis, onehot_encode, imdecode and
the binary functions taking arrays or numbers on either side (add,
subtract, ..., logical_xor)."""
import numbers

import numpy as np

from mx_engine import MXNetError
from mx_ndarray import _internal
from mx_ndarray import op as _op
from mx_ndarray._ndarray import _set_methods
from mx_ndarray.ndarray import NDArray, array

# name: (array op, scalar op, reversed scalar op or None when symmetric,
#        what two Python numbers give), as MXNet's _ufunc_helper calls.
_BINARY = {
    "add": ("broadcast_add", "_plus_scalar", None, lambda x, y: x + y),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar", lambda x, y: x - y),
    "multiply": ("broadcast_mul", "_mul_scalar", None, lambda x, y: x * y),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", lambda x, y: x / y),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", lambda x, y: x / y),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar", lambda x, y: x % y),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar", lambda x, y: x ** y),
    "maximum": ("broadcast_maximum", "_maximum_scalar", None,
                lambda x, y: x if x > y else y),
    "minimum": ("broadcast_minimum", "_minimum_scalar", None,
                lambda x, y: x if x < y else y),
    "equal": ("broadcast_equal", "_equal_scalar", None, lambda x, y: 1 if x == y else 0),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", None,
                  lambda x, y: 1 if x != y else 0),
    # number OP array is array (reversed OP) number
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar",
                lambda x, y: 1 if x > y else 0),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar", lambda x, y: 1 if x >= y else 0),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar",
               lambda x, y: 1 if x < y else 0),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
                     lambda x, y: 1 if x <= y else 0),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", None,
                    lambda x, y: 1 if x and y else 0),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", None,
                   lambda x, y: 1 if x or y else 0),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", None,
                    lambda x, y: 1 if bool(x) != bool(y) else 0),
}

__all__ = ["moveaxis", "onehot_encode", "imdecode", "split_v2"] + list(_BINARY)


def _binary(name, array_op, scalar_op, rscalar_op, numbers_fn):
    array_fn = getattr(_op, array_op)
    scalar_fn = getattr(_internal, scalar_op)
    rscalar_fn = getattr(_internal, rscalar_op or scalar_op)

    def fn(lhs, rhs):
        if isinstance(lhs, numbers.Number):
            if isinstance(rhs, numbers.Number):
                return numbers_fn(lhs, rhs)
            if isinstance(rhs, NDArray):
                return rscalar_fn(rhs, scalar=float(lhs))
        elif isinstance(lhs, NDArray):
            if isinstance(rhs, numbers.Number):
                return scalar_fn(lhs, scalar=float(rhs))
            if isinstance(rhs, NDArray):
                return array_fn(lhs, rhs)
        raise TypeError(f"type {type(rhs)} not supported")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{name}(lhs, rhs)`` element-wise with broadcasting; either side may "
                  f"be an NDArray or a number (two numbers give a number), as MXNet's.")
    return fn


globals().update({name: _binary(name, *spec) for name, spec in _BINARY.items()})


def _axes(axes, ndim, what):
    """``axes`` (an int or a sequence of ints, negative from the end) as a
    tuple of distinct axes in [0, ndim), as NumPy's normalize_axis_tuple."""
    try:
        axes = tuple(axes) if not isinstance(axes, numbers.Integral) else (axes,)
        out = tuple(int(a) + ndim if a < 0 else int(a) for a in axes)
    except TypeError:
        raise ValueError(f"moveaxis: '{what}' must be an integer or a sequence of "
                         f"integers") from None
    for a, given in zip(out, axes):
        if not 0 <= a < ndim:
            raise ValueError(f"{what.capitalize()} should verify 0 <= {what} < tensor.ndim "
                             f"({ndim}). Got {given}")
    if len(set(out)) != len(out):
        raise ValueError(f"moveaxis: repeated axis in '{what}' {axes}")
    return out


def moveaxis(tensor, source, destination):
    """``tensor`` with axes ``source`` moved to ``destination`` (ints or
    sequences of ints, negative from the end), the other axes in their
    order (a transpose), as MXNet's."""
    src = _axes(source, tensor.ndim, "source")
    dst = _axes(destination, tensor.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [n for n in range(tensor.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _op.transpose(tensor, axes=tuple(order))


def onehot_encode(indices, out):
    """One-hot encodes ``indices`` (float32, shape ``(n,)``) into ``out``
    (float32, shape ``(n, depth)``) and returns ``out``, as MXNet's
    deprecated function: float32 only, an index outside [0, depth) gives a
    row of zeros, a fractional one is truncated."""
    if indices.dtype != np.float32 or out.dtype != np.float32:
        raise MXNetError("one_hot_encode only support float32 as input/output")
    if indices.ndim != 1 or out.ndim != 2 or indices.shape[0] != out.shape[0]:
        raise MXNetError(f"OneHotEncode shape inconsistent: indices {indices.shape}, out "
                         f"{out.shape}")
    return _op.one_hot(indices, depth=out.shape[1], dtype="float32", out=out)


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """Decodes an encoded image (bytes) into an NDArray, as MXNet 1.x's
    deprecated ``mx.nd.imdecode``: OpenCV decodes it to RGB, ``clip_rect``
    ``(x0, y0, x1, y1)`` crops it when not all zero, ``mean`` (an NDArray of
    the output's shape) is subtracted; the result is float32
    ``(1, channels, height, width)``, written into ``out`` (``(c, h, w)``)
    or ``out[index]`` (``(n, c, h, w)``) when ``out`` is given.  Needs
    OpenCV (``cv2``).  MXNet 1.9.1's own ``mx.nd.imdecode`` fails
    ("Shape is unknown"), so there was no output to compare with."""
    try:
        import cv2
    except ImportError:
        raise MXNetError("mx.nd.imdecode needs OpenCV, which is not installed here: "
                         "pip install opencv-python-headless") from None
    flag = cv2.IMREAD_COLOR if channels == 3 else cv2.IMREAD_GRAYSCALE
    img = cv2.imdecode(np.frombuffer(bytes(str_img), dtype=np.uint8), flag)
    if img is None:
        raise MXNetError("imdecode: the buffer is not an image OpenCV can decode")
    if channels == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    else:
        img = img[:, :, None]
    x0, y0, x1, y1 = clip_rect
    if x0 or y0 or x1 or y1:
        img = img[y0:y1, x0:x1]
    chw = img.transpose(2, 0, 1)[None].astype(np.float32)
    if mean is not None:
        chw = chw - (mean.asnumpy() if isinstance(mean, NDArray) else np.asarray(mean))
    if out is None:
        return array(chw)
    if out.ndim == 3:
        out[:] = chw[0]
    else:
        out[index:index + 1] = chw
    return out


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits ``ary`` along ``axis`` into ``indices_or_sections`` equal
    sections (an int, which must divide the axis) or at the given indices
    (a tuple), as MXNet's; a list of NDArrays (one NDArray for one part)."""
    axis_size = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0 or axis_size % sections:
            raise ValueError("array split does not result in an equal division")
        indices = [i * (axis_size // sections) for i in range(sections)]
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError("indices_or_sections must either int or tuple of ints")
    return _internal._split_v2(ary, indices=tuple(indices), axis=axis, squeeze_axis=squeeze_axis)


# MXNet's NDArray.split_v2 is this function (not the _split_v2 operator).
_set_methods({"split_v2": split_v2})
