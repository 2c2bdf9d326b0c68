"""mx.image's augmenters against MXNet 1.9.1's outputs (data/augmenters_ref.npz,
made by make_mxnet_augmenters.py with the same seeds) and against NumPy
formulas written out here."""
import json
import os
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
from mx_io import image

DATA = os.path.join(os.path.dirname(__file__), "data")
REF = np.load(os.path.join(DATA, "augmenters_ref.npz"))
sys.path.insert(0, DATA)
from augmenter_cases import (AUGS, CREATE_KWARGS, EIGVAL, EIGVEC,  # noqa: E402
                             FLOAT_INPUT, build)


@pytest.fixture(scope="module")
def src():
    with open(os.path.join(DATA, "image_src.png"), "rb") as f:
        return image.imdecode(f.read())


def seeded(seed):
    random.seed(seed)
    np.random.seed(seed)


def assert_matches_mxnet(got, want, name):
    assert got.shape == want.shape, name
    # MXNet's older OpenCV rounds resized uint8 pixels by at most 1
    # (test_image.py); float colour arithmetic differs in the last bits.
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=2e-5,
                               atol=1 if want.dtype == np.uint8 else 2e-3, err_msg=name)


@pytest.mark.parametrize("name", sorted(AUGS))
@pytest.mark.parametrize("as_numpy", [False, True])
def test_each_augmenter_matches_mxnet(src, name, as_numpy):
    for seed in range(3):
        img = src.astype("float32") if name in FLOAT_INPUT else src.copy()
        if as_numpy:
            img = img.asnumpy()
        seeded(seed)
        got = build(image, AUGS[name])(img)
        assert isinstance(got, np.ndarray) == as_numpy
        want = REF[f"aug_{name}_{seed}"]
        assert got.dtype == want.dtype
        assert_matches_mxnet(got if as_numpy else got.asnumpy(), want, f"{name} seed {seed}")


@pytest.mark.parametrize("name", sorted(AUGS))
def test_dumps_match_mxnet(src, name):
    # The reference dumped the augmenter of seed 2 after its call (a random
    # order augmenter dumps its list as last shuffled).
    aug = build(image, AUGS[name])
    seeded(2)
    aug(src.astype("float32") if name in FLOAT_INPUT else src.copy())
    dumped = aug.dumps()
    if isinstance(dumped, list):
        dumped = json.dumps(dumped)
    assert json.loads(dumped) == json.loads(str(REF[f"dumps_{name}"]))


@pytest.mark.parametrize("name", sorted(CREATE_KWARGS))
def test_create_augmenter_matches_mxnet(src, name):
    augs = image.CreateAugmenter(**CREATE_KWARGS[name])
    dumps = [a.dumps() for a in augs]
    assert json.loads(json.dumps(dumps)) == json.loads(str(REF[f"create_dumps_{name}"]))
    for seed in range(3):
        seeded(seed)
        img = src
        for aug in augs:
            img = aug(img)
        assert_matches_mxnet(img.asnumpy(), REF[f"create_{name}_{seed}"], f"{name} {seed}")


# --- NumPy formulas -------------------------------------------------------------------
def float_image(seed, shape=(6, 7, 3)):
    return np.random.default_rng(seed).uniform(0, 255, shape).astype(np.float32)


def luma(img):
    return img.astype(np.float64) @ np.array([0.299, 0.587, 0.114])


def test_colour_augmenters_follow_their_formulas():
    img = float_image(0)
    x = img.astype(np.float64)
    for seed in range(4):
        random.seed(seed)
        alpha = 1.0 + random.uniform(-0.5, 0.5)
        checks = {
            "brightness": (image.BrightnessJitterAug(0.5), x * alpha),
            "contrast": (image.ContrastJitterAug(0.5),
                         x * alpha + (1 - alpha) * luma(x).mean()),
            "saturation": (image.SaturationJitterAug(0.5),
                           x * alpha + (1 - alpha) * luma(x)[..., None]),
        }
        for name, (aug, want) in checks.items():
            random.seed(seed)
            np.testing.assert_allclose(aug(img.copy()), want, rtol=1e-5, atol=1e-3,
                                       err_msg=name)


def test_hue_is_a_yiq_rotation():
    img = float_image(1)
    random.seed(3)
    theta = random.uniform(-0.3, 0.3) * np.pi
    yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    to_rgb = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
    y, i, q = np.moveaxis(img.astype(np.float64) @ yiq.T, -1, 0)
    rotated = np.stack([y, i * np.cos(theta) - q * np.sin(theta),
                        i * np.sin(theta) + q * np.cos(theta)], axis=-1)
    random.seed(3)
    np.testing.assert_allclose(image.HueJitterAug(0.3)(img), rotated @ to_rgb.T,
                               rtol=1e-5, atol=1e-3)


def test_lighting_gray_flip_normalize_cast():
    img = float_image(2)
    np.random.seed(4)
    alpha = np.random.normal(0, 0.2, 3)
    np.random.seed(4)
    np.testing.assert_allclose(image.LightingAug(0.2, EIGVAL, EIGVEC)(img.copy()),
                               img + EIGVEC @ (alpha * EIGVAL), rtol=1e-6, atol=1e-4)
    gray = img @ np.array([0.21, 0.72, 0.07])
    random.seed(0)          # random.random() = 0.844: converts with p=0.9, not with p=0.8
    np.testing.assert_allclose(image.RandomGrayAug(0.9)(img), np.repeat(gray[..., None], 3, 2),
                               rtol=1e-5)
    random.seed(0)
    np.testing.assert_array_equal(image.RandomGrayAug(0.8)(img), img)
    random.seed(0)
    np.testing.assert_array_equal(image.HorizontalFlipAug(0.9)(img), img[:, ::-1])
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 8.0])
    np.testing.assert_allclose(image.ColorNormalizeAug(mean, std)(img.copy()),
                               (img - mean) / std, rtol=1e-6)
    u8 = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    assert image.CastAug()(u8).dtype == np.float32
    assert image.CastAug("float16")(nd.array(u8, dtype="uint8")).dtype == np.float16


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.0, 1.0))
def test_saturation_and_contrast_keep_luma(seed, amount):
    img = float_image(seed, (5, 4, 3))
    random.seed(seed)
    out = image.SaturationJitterAug(amount)(img.copy())
    np.testing.assert_allclose(luma(out), luma(img), rtol=1e-4, atol=1e-2)
    out = image.ContrastJitterAug(amount)(img.copy())
    np.testing.assert_allclose(luma(out).mean(), luma(img).mean(), rtol=1e-4)


def test_ndarray_colour_augmenters_work_in_place_as_mxnet():
    src = nd.array(float_image(5))
    before = src.asnumpy()
    random.seed(1)
    out = image.BrightnessJitterAug(0.5)(src)
    assert out is src
    random.seed(1)
    np.testing.assert_allclose(src.asnumpy(), before * (1 + random.uniform(-0.5, 0.5)),
                               rtol=1e-6)


def test_random_order_shuffles_with_python_random():
    augs = [image.CastAug(), image.HorizontalFlipAug(0), image.RandomGrayAug(0)]
    order = image.RandomOrderAug(list(augs))
    random.seed(9)
    order(np.zeros((2, 2, 3), np.float32))
    random.seed(9)
    want = list(augs)
    random.shuffle(want)
    assert order.ts == want


def test_augmenter_errors():
    u8 = np.zeros((4, 4, 3), np.uint8)
    for aug in (image.BrightnessJitterAug(0.1), image.ContrastJitterAug(0.1),
                image.SaturationJitterAug(0.1), image.HueJitterAug(0.1),
                image.LightingAug(0.1, EIGVAL, EIGVEC), image.ColorNormalizeAug([1, 2, 3], None)):
        with pytest.raises(TypeError, match="needs a float image.*got dtype uint8"):
            aug(u8)
    with pytest.raises(ValueError, match="HxWx3 RGB image, got shape"):
        image.HueJitterAug(0.1)(np.zeros((4, 4, 1), np.float32))
    with pytest.raises(ValueError, match="rand_resize=True needs rand_crop=True"):
        image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(ValueError, match="'mean' must be True, None or"):
        image.CreateAugmenter((3, 8, 8), mean=[1, 2, 3])
    with pytest.raises(ValueError, match="data_shape must be"):
        image.CreateAugmenter((8, 8))
    with pytest.raises(NotImplementedError):
        image.Augmenter()(u8)
    with pytest.warns(DeprecationWarning, match="min_area"):
        aug = image.RandomSizedCropAug((4, 4), None, (0.5, 2), min_area=0.4)
    assert aug.area == 0.4
    with pytest.raises(TypeError, match="unexpected keyword"):
        image.RandomSizedCropAug((4, 4), 0.3, (0.5, 2), bogus=1)
