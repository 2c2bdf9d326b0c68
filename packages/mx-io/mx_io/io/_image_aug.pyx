# cython: language_level=3
"""ImageRecordIter's per-image packing (image_aug.h) as one call without the
GIL, and the per-image random draws, derived from (seed, epoch, record) so
that a batch does not depend on which thread made it."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libcpp cimport bool as cbool

import numpy as np


cdef extern from "image_aug.h" namespace "mxio" nogil:
    cdef cppclass PackParams:
        int img_h, img_w, img_c
        int out_h, out_w, out_c
        int crop_y, crop_x
        int pad
        float fill
        cbool mirror
        const float* mean
        const float* mult
        const float* mean_img
    void pack_image[T](const uint8_t* img, T* out, const PackParams& p, cbool normalise)


ctypedef fused out_t:
    float
    uint8_t


def pack(const uint8_t[:, :, ::1] img, out_t[::1] out, Py_ssize_t slot, int out_c, int out_h,
         int out_w, int crop_y, int crop_x, int pad, int fill, bint mirror,
         const float[::1] mean, const float[::1] mult, const float[::1] mean_img=None):
    """Writes slot ``slot`` of the flat batch ``out`` (CHW) from ``img``
    (HWC uint8, BGR or grey): the crop of ``out_h`` x ``out_w`` at
    (crop_y, crop_x) of the image padded by ``pad`` pixels of ``fill``,
    mirrored when asked; float output is (pixel - mean) * mult per channel
    (mean_img, C x out_h x out_w, replaces mean when given)."""
    cdef PackParams p
    cdef Py_ssize_t size = <Py_ssize_t>out_c * out_h * out_w
    if slot < 0 or (slot + 1) * size > out.shape[0]:
        raise ValueError(f"ImageRecordIter: slot {slot} is outside the batch buffer")
    if mean.shape[0] < out_c or mult.shape[0] < out_c:
        raise ValueError("ImageRecordIter: mean and mult need one value per channel")
    if not 0 <= fill <= 255:
        raise ValueError(f"ImageRecordIter: fill value {fill} is not a byte (0-255)")
    if mean_img is not None and mean_img.shape[0] != size:
        raise ValueError(f"ImageRecordIter: mean_img holds {mean_img.shape[0]} values, "
                         f"the data shape {size}")
    if (crop_y < 0 or crop_x < 0 or crop_y + out_h > img.shape[0] + 2 * pad
            or crop_x + out_w > img.shape[1] + 2 * pad):
        raise ValueError(f"ImageRecordIter: crop ({crop_y}, {crop_x}) of {out_h}x{out_w} is "
                         f"outside the padded image {img.shape[0]}x{img.shape[1]} + {pad}")
    p.img_h, p.img_w, p.img_c = img.shape[0], img.shape[1], img.shape[2]
    p.out_h, p.out_w, p.out_c = out_h, out_w, out_c
    p.crop_y, p.crop_x, p.pad, p.fill, p.mirror = crop_y, crop_x, pad, fill, mirror
    p.mean, p.mult = &mean[0], &mult[0]
    p.mean_img = &mean_img[0] if mean_img is not None else NULL
    # An empty image (a warp to nothing) is all border: never read.
    cdef const uint8_t* pixels = &img[0, 0, 0] if img.shape[0] and img.shape[1] else NULL
    with nogil:
        if out_t is float:
            pack_image[float](pixels, &out[0] + slot * size, p, True)
        else:
            pack_image[uint8_t](pixels, &out[0] + slot * size, p, False)


cdef inline uint64_t splitmix64(uint64_t z) noexcept nogil:
    z += 0x9E3779B97F4A7C15ULL
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


def uniform_draws(uint64_t seed, uint64_t epoch, const int64_t[::1] records, int count):
    """``count`` uniforms in [0, 1) for each record, a function of
    (seed, epoch, record) alone: the same image gets the same draws whatever
    thread or batch it falls in."""
    out = np.empty((records.shape[0], count), dtype=np.float64)
    cdef double[:, ::1] view = out
    cdef Py_ssize_t i, j
    cdef uint64_t key
    with nogil:
        for i in range(records.shape[0]):
            key = splitmix64(splitmix64(splitmix64(seed) ^ epoch) ^ <uint64_t>records[i])
            for j in range(count):
                key = splitmix64(key)
                # The top 53 bits, as a double in [0, 1).
                view[i, j] = (key >> 11) * (1.0 / 9007199254740992.0)
    return out
