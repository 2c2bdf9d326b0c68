# cython: language_level=3
"""Row copies into batch arrays without the GIL: a block of consecutive rows
(one memcpy) or rows picked by index (one memcpy each).  Arrays are seen as
(rows, bytes per row) uint8."""
from libc.stdint cimport int64_t
from libc.string cimport memcpy


def copy_rows(const unsigned char[:, ::1] src, Py_ssize_t begin, unsigned char[:, ::1] dst):
    """dst[:] = src[begin:begin + len(dst)]."""
    cdef Py_ssize_t n = dst.shape[0], width = dst.shape[1]
    if src.shape[1] != width or begin < 0 or begin + n > src.shape[0]:
        raise ValueError(f"copy_rows: rows [{begin}, {begin + n}) of width {width} do not lie "
                         f"in a source of {src.shape[0]} rows of width {src.shape[1]}")
    if n and width:
        with nogil:
            memcpy(&dst[0, 0], &src[begin, 0], n * width)


def gather_rows(const unsigned char[:, ::1] src, const int64_t[::1] rows,
                unsigned char[:, ::1] dst):
    """dst[i] = src[rows[i]]."""
    cdef Py_ssize_t i, n = rows.shape[0], width = dst.shape[1], count = src.shape[0]
    if dst.shape[0] != n or src.shape[1] != width:
        raise ValueError("gather_rows: source, rows and destination do not agree")
    for i in range(n):
        if rows[i] < 0 or rows[i] >= count:
            raise IndexError(f"gather_rows: row {rows[i]} outside [0, {count})")
    if width:
        with nogil:
            for i in range(n):
                memcpy(&dst[i, 0], &src[rows[i], 0], width)
