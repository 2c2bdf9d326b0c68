"""ImageRecordIter / ImageRecordUInt8Iter: MXNet 1.9.1's batches on the same
file (data/image_record/make_reference.py), every augmenter against a NumPy
(or cv2) reference of its formula, seeded determinism across thread counts,
sharding, round_batch, shuffling, corrupt records and parameter errors."""
import json
import pathlib

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from mx_io import recordio  # noqa: E402
from mx_io.errors import RecordIOError  # noqa: E402
from mx_io.io import ImageRecordIter, ImageRecordUInt8Iter  # noqa: E402

DATA = pathlib.Path(__file__).parent / "data" / "image_record"
REC = DATA / "images.rec"


def _load_reference():
    """({name: MXNet's arguments}, {name: {(epoch, batch): {data, label, pad}}})."""
    ref = np.load(DATA / "reference.npz")
    configs = json.loads(str(ref["configs"]))
    for cfg in configs.values():
        for key in ("path_imglist", "mean_img"):
            if key in cfg:
                cfg[key] = str(DATA / cfg[key])
    out = {}
    for key in ref.files:
        if key == "configs":
            continue
        name, epoch, batch, field = key.split("/")
        out.setdefault(name, {}).setdefault((int(epoch), int(batch)), {})[field] = ref[key]
    return configs, out


CONFIGS, REFERENCE = _load_reference()
# Pixel units per output unit, to compare in pixels.
PIXEL_SCALE = {"resize_center_meanstd": np.array([58.395, 57.12, 57.375])[:, None, None],
               "mean_img": np.array([4.0, 8.0, 16.0])[:, None, None],
               "center_scale_mirror": 255.0}


def read_epochs(it, epochs=2):
    out = []
    for epoch in range(epochs):
        if epoch:
            it.reset()
        out.append([(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad, b.index) for b in it])
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_mxnet(name):
    cfg = dict(CONFIGS[name])
    cfg.setdefault("label_width", 2)
    cls = ImageRecordUInt8Iter if cfg.pop("uint8", False) else ImageRecordIter
    ours = read_epochs(cls(path_imgrec=str(REC), preprocess_threads=2, **cfg))
    ref = REFERENCE[name]
    for epoch, batches in enumerate(ours):
        assert len(batches) == len([k for k in ref if k[0] == epoch])
        for k, (data, label, pad, _) in enumerate(batches):
            want = ref[(epoch, k)]
            # MXNet's pad without round_batch is 0 (it reports the padding
            # as data); ours counts it and zero-fills it.
            real = len(data) - pad if not cfg.get("round_batch", True) else len(data)
            if cfg.get("round_batch", True):
                assert pad == int(want["pad"])
            np.testing.assert_array_equal(label[:real], want["label"][:real])
            if "data" not in want:      # kept for the first epoch only
                continue
            assert data.dtype == want["data"].dtype and data.shape == want["data"].shape
            diff = np.abs(data[:real].astype(np.float64) - want["data"][:real]) \
                * PIXEL_SCALE.get(name, 1.0)
            # JPEG decode and resize rounding: a pixel level or two at most.
            assert diff.max() <= 2.01, (name, epoch, k, diff.max())
            assert diff.mean() <= 0.1, (name, epoch, k, diff.mean())


def test_mean_img_is_computed_as_mxnet_does(tmp_path):
    from mx_ndarray.serialization import load
    path = tmp_path / "mean.bin"
    ImageRecordIter(path_imgrec=str(REC), data_shape=(3, 32, 32), batch_size=4, resize=36,
                    label_width=2, mean_img=str(path))
    ours, theirs = load(str(path)), load(str(DATA / "mean_img.bin"))
    assert list(ours) == list(theirs) == ["mean_img"]
    np.testing.assert_allclose(ours["mean_img"].asnumpy(), theirs["mean_img"].asnumpy(), atol=0.5)


# -- files of our own, PNG so the decoded pixels are known exactly --------

def make_images(n, rng, sizes=((40, 48), (48, 40), (44, 44))):
    return [rng.integers(0, 256, size=sizes[i % len(sizes)] + (3,), dtype=np.uint8)
            for i in range(n)]


def write_rec(tmp_path, images, fmt=".png", labels=None, name="data"):
    rec_path, idx_path = tmp_path / f"{name}.rec", tmp_path / f"{name}.idx"
    writer = recordio.MXIndexedRecordIO(str(idx_path), str(rec_path), "w")
    for i, img in enumerate(images):
        label = float(i) if labels is None else labels[i]
        quality = 3 if fmt == ".png" else 95        # PNG: compression level
        payload = (recordio.pack_img(recordio.IRHeader(0, label, i, 0), img, quality, fmt)
                   if img is not None else
                   recordio.pack(recordio.IRHeader(0, label, i, 0), b"not an image at all"))
        writer.write_idx(i, payload)
    writer.close()
    return str(rec_path), str(idx_path)


def all_batches(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def rgb_chw(img):
    return img[:, :, ::-1].transpose(2, 0, 1).astype(np.float32)


def test_center_crop_pad_fill_and_normalisation(tmp_path):
    rng = np.random.default_rng(0)
    images = make_images(6, rng)
    rec, _ = write_rec(tmp_path, images)
    mean = np.array([10.0, 20.0, 30.0], np.float32)[:, None, None]
    std = np.array([2.0, 4.0, 5.0], np.float32)[:, None, None]
    it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 50, 46), batch_size=3, pad=5,
                         fill_value=7, mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=4,
                         std_b=5, scale=0.5, preprocess_threads=2)
    got = np.concatenate([d for d, _, _ in all_batches(it)])
    for i, img in enumerate(images):
        padded = np.pad(rgb_chw(img), ((0, 0), (5, 5), (5, 5)), constant_values=7)
        y, x = (padded.shape[1] - 50) // 2, (padded.shape[2] - 46) // 2
        want = (padded[:, y:y + 50, x:x + 46] - mean) * 0.5 / std
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-5)


def test_random_crop_and_mirror_are_windows_of_the_image(tmp_path):
    rng = np.random.default_rng(1)
    images = make_images(24, rng)
    rec, _ = write_rec(tmp_path, images)
    it = ImageRecordUInt8Iter(path_imgrec=rec, data_shape=(3, 30, 30), batch_size=8,
                              rand_crop=True, rand_mirror=True, pad=2, fill_value=0, seed=3)
    got = np.concatenate([d for d, _, _ in all_batches(it)])
    corners, mirrors = set(), set()
    for i, img in enumerate(images):
        padded = np.pad(rgb_chw(img), ((0, 0), (2, 2), (2, 2))).astype(np.uint8)
        found = [(y, x, m) for y in range(padded.shape[1] - 29) for x in range(padded.shape[2] - 29)
                 for m in (False, True)
                 if np.array_equal(got[i], padded[:, y:y + 30, x:x + 30][:, :, ::-1] if m
                                   else padded[:, y:y + 30, x:x + 30])]
        assert found, f"image {i} is no (mirrored) 30x30 window of the padded image"
        corners.add(found[0][:2])
        mirrors.add(found[0][2])
    assert len(corners) > 5 and mirrors == {False, True}


@pytest.mark.parametrize("inter_method", [0, 1, 2, 3, 4])
def test_resize_matches_cv2(tmp_path, inter_method):
    rng = np.random.default_rng(2)
    images = make_images(3, rng)
    rec, _ = write_rec(tmp_path, images)
    it = ImageRecordUInt8Iter(path_imgrec=rec, data_shape=(3, 30, 30), batch_size=3,
                              resize=33, inter_method=inter_method)
    got = all_batches(it)[0][0]
    for i, img in enumerate(images):
        h, w = img.shape[:2]
        size = (33, 33 * h // w) if h > w else (33 * w // h, 33)   # (width, height)
        resized = cv2.resize(img, size, interpolation=inter_method)
        y, x = (resized.shape[0] - 30) // 2, (resized.shape[1] - 30) // 2
        np.testing.assert_array_equal(got[i], rgb_chw(resized[y:y + 30, x:x + 30]))


def test_rotate_and_scale_match_the_affine_formula(tmp_path):
    rng = np.random.default_rng(3)
    images = make_images(2, rng)
    rec, _ = write_rec(tmp_path, images)
    it = ImageRecordUInt8Iter(path_imgrec=rec, data_shape=(3, 30, 30), batch_size=2, rotate=30,
                              min_random_scale=0.9, max_random_scale=0.9, fill_value=9)
    got = all_batches(it)[0][0]
    for i, img in enumerate(images):
        rows, cols = img.shape[:2]
        a, b, s = np.cos(np.pi / 6), np.sin(np.pi / 6), 0.9
        # MXNet's DefaultImageAugmenter with ratio 1 (hs = ws = scale), no shear.
        m = np.array([[s * a, s * b, 0], [-b * s, a * s, 0]], np.float32)
        new_w, new_h = int(s * cols), int(s * rows)
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        warped = cv2.warpAffine(img, m, (new_w, new_h), flags=1, borderMode=cv2.BORDER_CONSTANT,
                                borderValue=(9, 9, 9))
        y, x = (new_h - 30) // 2, (new_w - 30) // 2
        np.testing.assert_array_equal(got[i], rgb_chw(warped[y:y + 30, x:x + 30]))


def test_random_augmenters_follow_mxnets_formulas_for_their_draws(tmp_path):
    """Every random draw (crop corner, mirror, shear, angle, scale, aspect)
    taken from the per-record uniforms and applied with MXNet's formulas in
    NumPy and cv2.warpAffine here."""
    rng = np.random.default_rng(12)
    images = make_images(6, rng, sizes=((60, 64), (64, 60), (62, 62)))
    rec, _ = write_rec(tmp_path, images)
    seed, out = 21, 40
    it = ImageRecordUInt8Iter(path_imgrec=rec, data_shape=(3, out, out), batch_size=6,
                              seed=seed, rand_crop=True, rand_mirror=True, max_rotate_angle=20,
                              max_shear_ratio=0.2, max_aspect_ratio=0.3, min_random_scale=0.8,
                              max_random_scale=1.2, fill_value=3)
    got = all_batches(it)[0][0]
    draws = _image_aug.uniform_draws(seed, 0, np.arange(6, dtype=np.int64), 9)
    for i, img in enumerate(images):
        crop_y, crop_x, mirror, shear, angle, scale, aspect = draws[i][:7]
        rows, cols = img.shape[:2]
        s = 0.2 * (shear * 2 - 1)
        deg = -20 + min(int(angle * 41), 40)
        a, b = np.cos(deg / 180 * np.pi), np.sin(deg / 180 * np.pi)
        sc = scale * 0.4 + 0.8
        ratio = aspect * 0.3 * 2 - 0.3 + 1
        hs = 2 * sc / (1 + ratio)
        ws = ratio * hs
        new_w, new_h = int(sc * cols), int(sc * rows)
        m = np.array([[hs * a - s * b * ws, hs * b + s * a * ws, 0],
                      [-b * ws, a * ws, 0]], np.float32)
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        warped = cv2.warpAffine(img, m, (new_w, new_h), flags=1,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=(3, 3, 3))
        y = min(int(crop_y * (new_h - out + 1)), new_h - out)
        x = min(int(crop_x * (new_w - out + 1)), new_w - out)
        want = rgb_chw(warped[y:y + out, x:x + out])
        if mirror < 0.5:
            want = want[:, :, ::-1]
        np.testing.assert_array_equal(got[i], want, err_msg=f"image {i}")


RANDOM = dict(data_shape=(3, 28, 28), batch_size=5, rand_crop=True, rand_mirror=True,
              max_rotate_angle=20, max_aspect_ratio=0.2, min_random_scale=0.9,
              max_random_scale=1.1, max_shear_ratio=0.1, inter_method=10, shuffle=True)


def test_same_seed_same_batches_whatever_the_threads(tmp_path):
    rng = np.random.default_rng(4)
    rec, idx = write_rec(tmp_path, make_images(17, rng))
    runs = [read_epochs(ImageRecordIter(path_imgrec=rec, path_imgidx=idx, seed=11,
                                        preprocess_threads=t, **RANDOM)) for t in (1, 2, 3)]
    for run in runs[1:]:
        for epoch_a, epoch_b in zip(runs[0], run):
            for (d1, l1, p1, _), (d2, l2, p2, _) in zip(epoch_a, epoch_b, strict=True):
                np.testing.assert_array_equal(d1, d2)
                np.testing.assert_array_equal(l1, l2)
                assert p1 == p2
    other = read_epochs(ImageRecordIter(path_imgrec=rec, path_imgidx=idx, seed=12, **RANDOM))
    assert not np.array_equal(other[0][0][0], runs[0][0][0][0])
    # A new epoch draws a new order and new augmentations.
    assert not np.array_equal(runs[0][0][0][0], runs[0][1][0][0])


def test_seed_aug_draws_the_augmentations_and_seed_the_order(tmp_path):
    rng = np.random.default_rng(4)
    rec, idx = write_rec(tmp_path, make_images(10, rng))

    def first_epoch(**seeds):
        return read_epochs(ImageRecordIter(path_imgrec=rec, path_imgidx=idx, **RANDOM, **seeds),
                           epochs=1)[0]
    base = first_epoch(seed=1, seed_aug=7)
    same_aug = first_epoch(seed=2, seed_aug=7)
    other_aug = first_epoch(seed=1, seed_aug=8)
    order = lambda e: np.concatenate([l for _, l, _, _ in e])     # noqa: E731
    assert not np.array_equal(order(base), order(same_aug))
    np.testing.assert_array_equal(order(base), order(other_aug))
    # The same record gets the same augmentation under the same seed_aug.
    by_label = lambda e: {int(l): d[i] for d, ls, _, _ in e for i, l in enumerate(ls)}  # noqa
    a, b, c = by_label(base), by_label(same_aug), by_label(other_aug)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not all(np.array_equal(a[k], c[k]) for k in a)


def test_truncated_rec_names_the_file_and_offset(tmp_path):
    rec, _ = write_rec(tmp_path, make_images(4, np.random.default_rng(11)))
    data = pathlib.Path(rec).read_bytes()
    pathlib.Path(rec).write_bytes(data[:len(data) - 100])
    with pytest.raises(RecordIOError, match=r"data\.rec', byte offset \d+: record part claims"):
        list(ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2))


def test_shuffle_reads_every_record_once_per_epoch(tmp_path):
    rng = np.random.default_rng(5)
    rec, idx = write_rec(tmp_path, make_images(20, rng))
    epochs = read_epochs(ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 8, 8),
                                         batch_size=5, shuffle=True, seed=1), epochs=3)
    orders = [np.concatenate([l for _, l, _, _ in e]) for e in epochs]
    for order in orders:
        assert sorted(order) == list(range(20))
    assert len({tuple(o) for o in orders}) == 3


@pytest.mark.parametrize("with_idx", [True, False])
def test_sharding_partitions_the_records(tmp_path, with_idx):
    rng = np.random.default_rng(6)
    rec, idx = write_rec(tmp_path, make_images(11, rng))
    parts = []
    for part in range(3):
        it = ImageRecordIter(path_imgrec=rec, path_imgidx=idx if with_idx else "",
                             data_shape=(3, 8, 8), batch_size=2, num_parts=3, part_index=part,
                             round_batch=False)
        labels = [l[:len(l) - p] for _, l, p in all_batches(it)]
        parts.append(np.concatenate(labels).tolist())
    if with_idx:    # dmlc's indexed split: ceil(11 / 3) records a part
        assert parts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    else:           # its byte split: a record goes where its first byte falls
        offsets = [int(line.split()[1]) for line in open(idx)]
        step = -(-pathlib.Path(rec).stat().st_size // 3)
        step += -step % 4
        assert parts == [[i for i, off in enumerate(offsets) if k * step <= off < (k + 1) * step]
                         for k in range(3)]
        assert sorted(sum(parts, [])) == list(range(11))


def test_round_batch_pads_from_the_start_and_resumes(tmp_path):
    rng = np.random.default_rng(7)
    rec, _ = write_rec(tmp_path, make_images(10, rng))
    it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4)
    epochs = [[(l.tolist(), p) for _, l, p, _ in e] for e in read_epochs(it, 3)]
    # MXNet 1.9.1 (checked with it): the next epoch starts after the records
    # that completed the last batch.
    assert epochs[0] == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0), ([8, 9, 0, 1], 2)]
    assert epochs[1] == [([2, 3, 4, 5], 0), ([6, 7, 8, 9], 0)]
    assert epochs[2] == epochs[0]
    # Shuffled, the completing records are the next epoch's first ones, and
    # that epoch reads the rest (MXNet 1.9.1 does the same).
    idx = rec[:-4] + ".idx"
    it = ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 8, 8), batch_size=4,
                         shuffle=True, seed=5)
    first, second = [np.concatenate([l for _, l, _, _ in e]) for e in read_epochs(it, 2)]
    assert sorted(first[:10]) == list(range(10)) and len(second) == 8
    assert sorted(np.concatenate([first[10:], second])) == list(range(10))
    it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4, round_batch=False)
    last = all_batches(it)[-1]
    assert last[2] == 2 and last[1].tolist() == [8, 9, 0, 0] and not last[0][2:].any()


def test_corrupt_record_is_skipped_with_a_warning(tmp_path):
    rng = np.random.default_rng(8)
    images = make_images(7, rng)
    images[2] = None
    rec, _ = write_rec(tmp_path, images, fmt=".jpg")
    with pytest.warns(RuntimeWarning, match=r"skipping record 2 \(byte offset \d+\)"):
        it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 16, 16), batch_size=3,
                             round_batch=False, preprocess_threads=2)
        got = all_batches(it)
    labels = np.concatenate([l[:len(l) - p] for _, l, p in got]).tolist()
    assert labels == [0, 1, 3, 4, 5, 6]


def test_labels_from_imglist_and_header(tmp_path):
    rng = np.random.default_rng(9)
    images = make_images(4, rng)
    rec, _ = write_rec(tmp_path, images, labels=[[1, 2], [3, 4], [5, 6], [7, 8]])
    it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4, label_width=2)
    assert all_batches(it)[0][1].tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]
    lst = tmp_path / "data.lst"
    lst.write_text("".join(f"{i}\t{10 * i}\timg{i}.png\n" for i in range(4)))
    it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4,
                         path_imglist=str(lst), data_name="img", label_name="lab")
    assert all_batches(it)[0][1].tolist() == [0, 10, 20, 30]
    assert [(d.name, d.shape) for d in it.provide_data] == [("img", (4, 3, 8, 8))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("lab", (4,))]
    with pytest.raises(ValueError, match="holds 2 labels but label_width is 1"):
        ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4)


def test_an_image_scaled_to_nothing_is_all_padding(tmp_path):
    rec, _ = write_rec(tmp_path, make_images(2, np.random.default_rng(13)))
    it = ImageRecordUInt8Iter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, pad=10,
                              fill_value=5, min_random_scale=0.001, max_random_scale=0.001)
    data = all_batches(it)[0][0]
    assert (data == 5).all()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(batch_size=0), ValueError, "'batch_size' must be at least 1, got 0"),
    (dict(data_shape=(2, 8, 8)), ValueError, r"'data_shape' .* got \(2, 8, 8\)"),
    (dict(inter_method=5), ValueError, "'inter_method' must be one of .* got 5"),
    (dict(num_parts=2, part_index=2), ValueError, "'part_index' must be below num_parts=2"),
    (dict(fill_value=300), ValueError, r"'fill_value' must be in \[0, 255\], got 300"),
    (dict(dtype="int64"), ValueError, "'dtype' must be .* got 'int64'"),
    (dict(brightness=0.3), NotImplementedError, "'brightness' is not supported"),
    (dict(path_imgrec="/no/such.rec"), FileNotFoundError, "'path_imgrec': no such file"),
    (dict(data_shape=(3, 60, 60)), ValueError,
     r"record \d \(byte offset \d+\) .* smaller than data_shape"),
    (dict(std_g=0), ValueError, "'std_g' must not be 0"),
])
def test_bad_parameters_name_the_argument(tmp_path, kwargs, error, match):
    rec, _ = write_rec(tmp_path, make_images(2, np.random.default_rng(10)))
    args = dict(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        ImageRecordIter(**args)


# -- the packing kernel against NumPy, over random geometry ---------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from mx_io.io import _image_aug  # noqa: E402


def pack_reference(img, c, h, w, crop_y, crop_x, pad, fill, mirror, mean, mult, mean_img):
    """The formula: pad with fill, crop, mirror, BGR->RGB CHW, (x - mean) * mult."""
    chw = (img[:, :, ::-1] if img.shape[2] == 3 else img).transpose(2, 0, 1).astype(np.float32)
    padded = np.pad(chw, ((0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    crop = padded[:, crop_y:crop_y + h, crop_x:crop_x + w]
    if mirror:
        crop = crop[:, :, ::-1]
    m = mean_img.reshape(c, h, w) if mean_img is not None else mean[:c, None, None]
    return (crop - m) * mult[:c, None, None], crop


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_pack_kernel_matches_numpy(data):
    c = data.draw(st.sampled_from([1, 3]))
    img_h, img_w = data.draw(st.integers(1, 16)), data.draw(st.integers(1, 16))
    pad = data.draw(st.integers(0, 5))
    h = data.draw(st.integers(1, img_h + 2 * pad))
    w = data.draw(st.integers(1, img_w + 2 * pad))
    crop_y = data.draw(st.integers(0, img_h + 2 * pad - h))
    crop_x = data.draw(st.integers(0, img_w + 2 * pad - w))
    mirror, fill = data.draw(st.booleans()), data.draw(st.integers(0, 255))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    img = rng.integers(0, 256, (img_h, img_w, c), dtype=np.uint8)
    mean = (rng.random(3) * 100).astype(np.float32)
    mult = rng.random(3).astype(np.float32)
    mean_img = (rng.random(c * h * w) * 50).astype(np.float32) if data.draw(st.booleans()) else None
    want, pixels = pack_reference(img, c, h, w, crop_y, crop_x, pad, fill, mirror, mean, mult,
                                  mean_img)
    out = np.full(2 * c * h * w, np.nan, np.float32)
    _image_aug.pack(img, out, 1, c, h, w, crop_y, crop_x, pad, fill, mirror, mean, mult, mean_img)
    np.testing.assert_allclose(out[c * h * w:].reshape(c, h, w), want, rtol=1e-6, atol=1e-4)
    assert np.isnan(out[:c * h * w]).all()      # only its slot is written
    out8 = np.zeros(c * h * w, np.uint8)
    _image_aug.pack(img, out8, 0, c, h, w, crop_y, crop_x, pad, fill, mirror, mean, mult)
    np.testing.assert_array_equal(out8.reshape(c, h, w), pixels.astype(np.uint8))
