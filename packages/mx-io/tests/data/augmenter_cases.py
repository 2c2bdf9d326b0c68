"""The augmenter and ImageIter settings that make_mxnet_augmenters.py ran
under MXNet 1.9.1 and test_augmenters.py / test_image_iter.py replay: plain
data (no mxnet import), shared by both sides.

An augmenter is ``(class name, args)``; an argument that is itself a list
of such pairs is a list of augmenters (RandomOrderAug, SequentialAug).
"""
import numpy as np

EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                   [-0.5808, -0.0045, -0.8140],
                   [-0.5836, -0.6948, 0.4203]])

AUGS = {
    "resize_short": ("ResizeAug", (20, 1)),
    "resize_interp9": ("ResizeAug", (40, 9)),
    "force_resize": ("ForceResizeAug", ((15, 11), 1)),
    "random_crop": ("RandomCropAug", ((16, 12), 1)),
    "random_sized_crop": ("RandomSizedCropAug", ((16, 12), 0.3, (0.75, 1.33), 1)),
    "random_sized_crop_tuple": ("RandomSizedCropAug", ((10, 10), (0.2, 0.6), (0.5, 2.0), 0)),
    "center_crop": ("CenterCropAug", ((20, 10), 1)),
    "brightness": ("BrightnessJitterAug", (0.4,)),
    "contrast": ("ContrastJitterAug", (0.4,)),
    "saturation": ("SaturationJitterAug", (0.4,)),
    "hue": ("HueJitterAug", (0.4,)),
    "color_jitter": ("ColorJitterAug", (0.3, 0.3, 0.3)),
    "lighting": ("LightingAug", (0.1, EIGVAL, EIGVEC)),
    "color_normalize": ("ColorNormalizeAug", (np.array([120.0, 110.0, 100.0], np.float32),
                                              np.array([50.0, 60.0, 70.0], np.float32))),
    "random_gray": ("RandomGrayAug", (0.5,)),
    "flip": ("HorizontalFlipAug", (0.5,)),
    "cast": ("CastAug", ()),
    "random_order": ("RandomOrderAug", ([("BrightnessJitterAug", (0.2,)),
                                         ("HorizontalFlipAug", (0.7,)),
                                         ("RandomGrayAug", (0.6,))],)),
    "sequential": ("SequentialAug", ([("RandomCropAug", ((20, 20), 1)), ("CastAug", ()),
                                      ("HueJitterAug", (0.3,))],)),
}
# Colour augmenters need float images (MXNet's fail on uint8).
FLOAT_INPUT = {"brightness", "contrast", "saturation", "hue", "color_jitter", "lighting",
               "color_normalize", "random_gray", "random_order", "sequential"}
CREATE_KWARGS = {
    "plain": dict(data_shape=(3, 16, 16)),
    "everything": dict(data_shape=(3, 16, 16), resize=24, rand_crop=True, rand_resize=True,
                       rand_mirror=True, mean=True, std=True, brightness=0.2, contrast=0.2,
                       saturation=0.2, hue=0.2, pca_noise=0.1, rand_gray=0.3,
                       inter_method=1),
    "crop_mirror_mean": dict(data_shape=(3, 20, 12), rand_crop=True, rand_mirror=True,
                             mean=np.array([100.0, 110.0, 120.0]), inter_method=10),
}


def build(image, spec):
    """The augmenter ``spec`` with the classes of ``image`` (mx.image)."""
    name, args = spec
    args = [[build(image, s) for s in a] if isinstance(a, list) else a for a in args]
    return getattr(image, name)(*args)


# ImageIter settings, paths relative to image_iter/ (random.seed(7) and
# np.random.seed(7) before each is built).
ITER_CASES = {
    "rec_seq_pad": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec="images.rec"),
    "rec_idx_shuffle_discard": dict(batch_size=3, data_shape=(3, 10, 12),
                                    path_imgrec="images.rec", path_imgidx="images.idx",
                                    shuffle=True, rand_crop=True, rand_mirror=True,
                                    last_batch_handle="discard"),
    "rec_idx_roll_over": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec="images.rec",
                              path_imgidx="images.idx", shuffle=True, rand_crop=True,
                              last_batch_handle="roll_over"),
    "rec_parts": dict(batch_size=2, data_shape=(3, 12, 12), path_imgrec="images.rec",
                      path_imgidx="images.idx", num_parts=3, part_index=1),
    "lst_two_labels": dict(batch_size=4, data_shape=(3, 12, 14), path_imglist="images.lst",
                           path_root=".", label_width=2, dtype="float64", resize=13,
                           mean=True, std=True),
    "lst_shuffle_colour": dict(batch_size=5, data_shape=(3, 12, 12),
                               path_imglist="images.lst", path_root=".", label_width=2,
                               shuffle=True, rand_crop=True, rand_resize=True,
                               brightness=0.3, contrast=0.3, saturation=0.3, hue=0.2,
                               pca_noise=0.1, rand_gray=0.2),
    "rec_with_lst_labels": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec="images.rec",
                                path_imgidx="images.idx", path_imglist="images.lst",
                                label_width=2),
    "imglist": dict(batch_size=3, data_shape=(3, 12, 12),
                    imglist=[[float(i), f"imgs/img{i}.png"] for i in range(7)],
                    path_root=".", rand_mirror=True),
}
