"""mx_io.image against MXNet 1.9.1's mx.image outputs (data/image_ref.npz,
made by make_mxnet_image.py) and NumPy."""
import os
import random

import numpy as np
import pytest

import mx_ndarray as nd
from mx_io import image
from mx_io.errors import RecordFormatError

DATA = os.path.join(os.path.dirname(__file__), "data")
REF = np.load(os.path.join(DATA, "image_ref.npz"))
SRC_PNG = os.path.join(DATA, "image_src.png")


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def src():
    return image.imdecode(read("image_src.png"))


@pytest.mark.parametrize("ext", ["jpg", "png"])
@pytest.mark.parametrize("flag", [0, 1])
@pytest.mark.parametrize("to_rgb", [0, 1])
def test_imdecode_and_imread_match_mxnet(ext, flag, to_rgb):
    buf = read(f"image_src.{ext}")
    want = REF[f"imdecode_{ext}_{flag}_{to_rgb}"]
    for got in (image.imdecode(buf, flag=flag, to_rgb=to_rgb),
                image.imdecode(np.frombuffer(buf, np.uint8), flag, to_rgb),
                image.imdecode(nd.array(np.frombuffer(buf, np.uint8), dtype="uint8"), flag,
                               to_rgb),
                image.imread(os.path.join(DATA, f"image_src.{ext}"), flag=flag,
                             to_rgb=to_rgb)):
        assert isinstance(got, nd.NDArray) and got.dtype == np.uint8
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_imdecode_rgb_is_bgr_reversed_and_out():
    bgr = image.imdecode(read("image_src.png"), to_rgb=0).asnumpy()
    out = nd.zeros(bgr.shape, dtype="uint8")
    res = image.imdecode(read("image_src.png"), out=out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), bgr[:, :, ::-1])


def test_imdecode_errors():
    with pytest.raises(ValueError, match="convert a str to bytes"):
        image.imdecode("not bytes")
    with pytest.raises(RecordFormatError, match="imdecode: 5 bytes"):
        image.imdecode(b"hello")


@pytest.mark.parametrize("interp", range(5))
@pytest.mark.parametrize("which, w, h", [("up", 50, 41), ("down", 13, 11)])
def test_imresize_matches_mxnet(src, interp, which, w, h):
    got = image.imresize(src, w, h, interp=interp)
    assert got.shape == (h, w, 3) and got.dtype == np.uint8
    # MXNet links an older OpenCV: its bicubic rounds a few pixels the other way.
    np.testing.assert_allclose(got.asnumpy(), REF[f"imresize_{which}_{interp}"],
                               atol=1 if interp == 2 else 0, rtol=0)


def test_imresize_float_and_nearest_by_numpy(src):
    got = image.imresize(src.astype("float32"), 20, 15)
    np.testing.assert_allclose(got.asnumpy(), REF["imresize_float"], rtol=1e-5, atol=1e-3)
    # Nearest-neighbour doubling is pixel repetition.
    small = nd.array(np.arange(12, dtype=np.uint8).reshape(2, 2, 3), dtype="uint8")
    doubled = image.imresize(small, 4, 4, interp=0).asnumpy()
    np.testing.assert_array_equal(doubled, small.asnumpy().repeat(2, 0).repeat(2, 1))
    with pytest.raises(ValueError, match="interp must be 0-4"):
        image.imresize(small, 4, 4, interp=7)


@pytest.mark.parametrize("size", [10, 40])
@pytest.mark.parametrize("interp", [1, 2, 9])
def test_resize_short_matches_mxnet(src, size, interp):
    got = image.resize_short(src, size, interp)
    np.testing.assert_allclose(got.asnumpy(), REF[f"resize_short_{size}_{interp}"], atol=1,
                               rtol=0)


def test_crops_match_mxnet_and_numpy(src):
    np.testing.assert_array_equal(image.fixed_crop(src, 3, 4, 20, 10).asnumpy(),
                                  src.asnumpy()[4:14, 3:23])
    np.testing.assert_allclose(image.fixed_crop(src, 3, 4, 20, 10, size=(15, 12)).asnumpy(),
                               REF["fixed_crop_size"], atol=1, rtol=0)
    for w, h in [(16, 16), (40, 10), (37, 29)]:
        crop, rect = image.center_crop(src, (w, h))
        assert crop.shape == (h, w, 3)
        np.testing.assert_array_equal(rect, REF[f"center_crop_rect_{w}_{h}"])
        np.testing.assert_allclose(crop.asnumpy(), REF[f"center_crop_{w}_{h}"], atol=1, rtol=0)
        random.seed(42)                       # MXNet draws from Python's random too
        crop, rect = image.random_crop(src, (w, h))
        np.testing.assert_array_equal(rect, REF[f"random_crop_rect_{w}_{h}"])
        np.testing.assert_allclose(crop.asnumpy(), REF[f"random_crop_{w}_{h}"], atol=1, rtol=0)


def test_random_size_crop_bounds(src):
    random.seed(0)
    for _ in range(20):
        crop, (x0, y0, w, h) = image.random_size_crop(src, (8, 8), (0.3, 1.0), (0.75, 1.33))
        assert crop.shape == (8, 8, 3)
        assert 0 <= x0 and x0 + w <= 37 and 0 <= y0 and y0 + h <= 29


def test_scale_down_matches_mxnet():
    cases = [((640, 480), (720, 120)), ((360, 1000), (480, 500)), ((300, 400), (0, 0)),
             ((100, 100), (50, 60))]
    np.testing.assert_array_equal([image.scale_down(s, t) for s, t in cases], REF["scale_down"])


def test_color_normalize_matches_mxnet_and_numpy(src):
    mean = nd.array([123.68, 116.28, 103.53])
    std = nd.array([58.395, 57.12, 57.375])
    x = src.astype("float32")
    out = image.color_normalize(x, mean, std)
    assert out is x                                        # in place, as MXNet
    np.testing.assert_allclose(out.asnumpy(), REF["color_normalize"], rtol=1e-6, atol=1e-6)
    want = src.asnumpy().astype(np.float32) - mean.asnumpy()
    np.testing.assert_allclose(image.color_normalize(src.astype("float32"), mean).asnumpy(),
                               want, rtol=1e-6)
    np.testing.assert_allclose(want, REF["color_normalize_nostd"], rtol=1e-6)
