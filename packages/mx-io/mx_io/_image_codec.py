"""Image encoding and decoding for mx.recordio and mx.image: OpenCV.

Chosen by measurement (benchmarks/compare_image_codecs.py, the README's
"Image codec" section): OpenCV's imdecode is as fast as libjpeg-turbo's
other Python wrappers on small JPEGs, releases the GIL, decodes exactly as
MXNet 1.9.1 did (same libjpeg-turbo, same BGR output), and its imencode
writes the very bytes MXNet's pack_img wrote.  OpenCV stays optional: it is
imported at the first image call, which names the package when it is missing.
"""
import numpy as np

from mx_io.errors import RecordFormatError

_JPEG_FORMATS = (".JPG", ".JPEG")
_PNG_FORMATS = (".PNG",)


def cv2():
    """The cv2 module, or an ImportError naming the package that provides it."""
    try:
        import cv2 as module
    except ImportError as err:
        raise ImportError(
            "mx image functions (pack_img, unpack_img, mx.image, im2rec) need OpenCV: "
            "pip install opencv-python-headless") from err
    return module


def encode(img, img_fmt=".jpg", quality=95, caller="pack_img"):
    """``img`` (HxW or HxWxC uint8, BGR) encoded as ``img_fmt``; quality is
    JPEG's 1-100 or PNG's compression level 0-9, as in MXNet's pack_img."""
    cv = cv2()
    fmt = img_fmt.upper()
    if fmt in _JPEG_FORMATS:
        params = [cv.IMWRITE_JPEG_QUALITY, int(quality)]
    elif fmt in _PNG_FORMATS:
        params = [cv.IMWRITE_PNG_COMPRESSION, int(quality)]
    else:
        params = []
    img = np.asarray(img)
    try:
        ok, buf = cv.imencode(img_fmt, img, params)
    except cv.error as err:
        raise RecordFormatError(
            f"{caller}: cannot encode an image of shape {img.shape} and dtype {img.dtype} "
            f"as '{img_fmt}': {str(err).strip().splitlines()[-1]}") from None
    if not ok:
        raise RecordFormatError(f"{caller}: OpenCV failed to encode an image of shape "
                                f"{img.shape} as '{img_fmt}'")
    return buf.tobytes()


def decode(buf, flag=-1, caller="unpack_img"):
    """The image encoded in ``buf`` as OpenCV's imdecode returns it (BGR,
    flag 1 colour, 0 grey, -1 unchanged); a clear error when it is not one."""
    cv = cv2()
    data = np.frombuffer(buf, dtype=np.uint8)
    img = cv.imdecode(data, int(flag)) if data.size else None
    if img is None:
        head = bytes(data[:8]).hex()
        raise RecordFormatError(f"{caller}: {data.size} bytes (starting {head or 'empty'}) "
                                f"are not an image OpenCV can decode")
    return img
