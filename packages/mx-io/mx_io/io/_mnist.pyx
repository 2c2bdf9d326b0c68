# cython: language_level=3
"""MNISTIter's native parts: idx payloads to float32 (scaled by 1/256, as
MXNet) in MXNet's shuffled order, without the GIL."""
from libc.stdint cimport uint8_t

import numpy as np


cdef extern from "_mnist_order.h" namespace "mxio" nogil:
    void mnist_order(unsigned* order, size_t n, unsigned seed, bint shuffle)


def example_order(size_t n, unsigned seed, bint shuffle):
    """The order MXNet 1.9.1's MNISTIter reads ``n`` examples in."""
    out = np.empty(n, dtype=np.uint32)
    cdef unsigned[::1] view = out
    if n:
        with nogil:
            mnist_order(&view[0], n, seed, shuffle)
    return out


def gather_scaled(const uint8_t[::1] pixels, size_t unit, const unsigned[::1] order,
                  float[::1] out):
    """out[i] = pixels[order[i]] / 256 for each example of ``unit`` bytes."""
    cdef size_t i, j, n = order.shape[0]
    cdef const uint8_t* src
    cdef float* dst
    if out.shape[0] != n * unit or <size_t>pixels.shape[0] < n * unit:
        raise ValueError("MNISTIter: buffers of the wrong size")
    with nogil:
        for i in range(n):
            src = &pixels[0] + <size_t>order[i] * unit
            dst = &out[0] + i * unit
            for j in range(unit):
                dst[j] = src[j] * (1.0 / 256.0)

