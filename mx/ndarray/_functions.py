"""MXNet 1.x's module-level NDArray helpers that are not operators:
moveaxis, onehot_encode and imdecode (python/mxnet/ndarray/ndarray.py)."""
import numpy as np

from mx_engine import MXNetError
from mx_ndarray import op as _op
from mx_ndarray.ndarray import NDArray, array

__all__ = ["moveaxis", "onehot_encode", "imdecode"]


def moveaxis(tensor, source, destination):
    """``tensor`` with axis ``source`` moved to ``destination``, the other
    axes in their order (a transpose).  Negative axes count from the end."""
    ndim = tensor.ndim
    try:
        src = source + ndim if source < 0 else source
        dst = destination + ndim if destination < 0 else destination
    except TypeError:
        raise ValueError("moveaxis: 'source' and 'destination' must be integers") from None
    if not 0 <= src < ndim:
        raise ValueError(f"Source should verify 0 <= source < tensor.ndim. Got {source}")
    if not 0 <= dst < ndim:
        raise ValueError(f"Destination should verify 0 <= destination < tensor.ndim "
                         f"({ndim}). Got {destination}")
    axes = [i for i in range(ndim) if i != src]
    axes.insert(dst, src)
    return _op.transpose(tensor, axes=tuple(axes))


def onehot_encode(indices, out):
    """One-hot encodes ``indices`` into ``out`` (shape ``(len(indices),
    depth)``) and returns ``out``; as MXNet's, built on ``one_hot``."""
    return _op.one_hot(indices, depth=out.shape[1], dtype=out.dtype.name, out=out)


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
