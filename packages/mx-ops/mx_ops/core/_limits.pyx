"""The size limits every shape and count is checked against before it
reaches C.

An array's shape holds ints in [0, 2**63-1] (MXNet's dim_t, int64); its
element count -- the product of its non-zero dimensions, the rule NumPy
applies, so that strides computed over a zero-size array cannot overflow
either -- fits int64 too (MXNet's index_t); and its bytes fit the 2**50
that the storage pool hands out on any device.  A shape that breaks the
first two rules is a ShapeError (a ValueError); one that only needs more
bytes than any device holds is an ArrayMemoryError (a MemoryError), as is a
request the device cannot satisfy (the pool raises that one).

Integer operator parameters are C ints (int32) unless the operator says
otherwise, as dmlc's parameters are in MXNet; shape parameters hold int64s.
"""
from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.stdint cimport int64_t

import reprlib

import numpy as np

from mx_engine.base import MXNetError

__all__ = ["INT32_MIN", "INT32_MAX", "INT64_MIN", "INT64_MAX", "MAX_BYTES", "MAX_COUNT",
           "ShapeError", "ArrayMemoryError", "shape_problem", "check_shape", "fits_int64",
           "is_int"]

cdef extern from *:
    """
    static inline int mx_mul_overflow(int64_t a, int64_t b, int64_t *out) {
        return __builtin_mul_overflow(a, b, out);
    }
    """
    int mx_mul_overflow(int64_t a, int64_t b, int64_t* out) noexcept nogil

INT32_MIN = -2 ** 31
INT32_MAX = 2 ** 31 - 1
INT64_MIN = -2 ** 63
INT64_MAX = 2 ** 63 - 1
# The storage pool's MAX_ALLOC (mx_storage/_storage.pyx): more than any device.
MAX_BYTES = 2 ** 50
# The most inputs or outputs one operator takes (num_args, num_outputs): each
# is a Python object and an engine variable, and a count read from a file is
# not backed by data, so 2**31 of them would exhaust memory, not fail.
MAX_COUNT = 2 ** 20

cdef int64_t _MAX_BYTES = MAX_BYTES


class ShapeError(MXNetError, ValueError):
    """Inputs whose shapes an operator cannot take, or a shape no array can
    have."""


class ArrayMemoryError(MXNetError, MemoryError):
    """An array of a valid shape that needs more bytes than any device
    holds."""


cpdef bint is_int(object s):
    """True for a Python or NumPy integer, not a bool."""
    return type(s) is int or (isinstance(s, (int, np.integer)) and not isinstance(s, bool))


cdef int64_t array_nbytes(tuple shape, Py_ssize_t itemsize) except -2:
    """The bytes an array of ``shape`` takes (its element count when
    ``itemsize`` is 0), or -1 where ``shape`` breaks a limit: the fast
    check, in C; ``check_shape`` then says which."""
    cdef int64_t count = 1, d
    cdef bint empty = False
    for s in shape:
        if not is_int(s):
            return -1
        try:
            d = s
        except OverflowError:
            return -1
        if d < 0:
            return -1
        if d == 0:
            empty = True
        elif mx_mul_overflow(count, d, &count):
            return -1
    if itemsize > 0 and mx_mul_overflow(count, itemsize, &count):
        return -1
    if empty:
        return 0
    if itemsize > 0 and count > _MAX_BYTES:
        return -1
    return count


cpdef bint fits_int64(tuple values, bint allow_none=False):
    """True when every entry is an int (or None, with ``allow_none``) within
    int64: a shape parameter's fast check, in C."""
    cdef int overflow
    for x in values:
        if x is None and allow_none:
            continue
        if type(x) is not int:
            return False
        PyLong_AsLongLongAndOverflow(x, &overflow)
        if overflow:
            return False
    return True


def _power(n):
    """``n`` with its nearest power of two, for messages about huge sizes."""
    if n < 2 ** 20:
        return str(n)
    e = n.bit_length() - 1
    if n == 2 ** e:
        return f"{n} (2**{e})"
    if n == 2 ** (e + 1) - 1:
        return f"{n} (2**{e + 1}-1)"
    return f"{n} (about 2**{e})"


def _problem(shape, itemsize):
    """(error class, why) for the first rule ``shape`` breaks, else (None, None)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        return ShapeError, f"a shape is a tuple of ints, not {type(shape).__name__}"
    shape = tuple(shape)
    for i, d in enumerate(shape):
        if not is_int(d):
            return ShapeError, f"dimension {i} is {d!r}, not an int"
        if d < 0:
            return ShapeError, f"dimension {i} is {d}, a negative size"
        if d > INT64_MAX:
            return ShapeError, (f"dimension {i} is {_power(int(d))}, more than int64's "
                                f"limit {_power(INT64_MAX)}")
    count = 1
    for d in shape:
        count *= int(d) or 1
    if count > INT64_MAX:
        return ShapeError, (f"its non-zero dimensions multiply to {_power(count)} elements, "
                            f"more than int64's limit {_power(INT64_MAX)}")
    if itemsize > 0:
        # NumPy's rule, zero-size arrays included: their strides are bytes too.
        nbytes = count * itemsize
        if nbytes > INT64_MAX:
            return ShapeError, (f"its non-zero dimensions would take {_power(nbytes)} bytes, "
                                f"more than int64's limit {_power(INT64_MAX)}")
        if nbytes > MAX_BYTES and 0 not in shape:
            return ArrayMemoryError, (f"it needs {_power(nbytes)} bytes, more than any device "
                                      f"holds (the limit is {_power(MAX_BYTES)})")
    return None, None


cpdef str shape_problem(shape, Py_ssize_t itemsize=0):
    """Why ``shape`` cannot be an array's shape (with elements of
    ``itemsize`` bytes, where given), or None when it can."""
    return _problem(shape, itemsize)[1]


def check_shape(shape, str where, Py_ssize_t itemsize=0, dtype=None):
    """Raises ShapeError (or ArrayMemoryError) ``"<where> is <shape>[ of
    <dtype>]: <why>"`` when ``shape`` breaks a limit; ``where`` names the
    operator and the argument or output (``"_zeros: argument 'shape'"``)."""
    if isinstance(shape, list):
        shape = tuple(shape)
    if type(shape) is tuple and array_nbytes(<tuple>shape, itemsize) >= 0:
        return
    error, why = _problem(shape, itemsize)
    if error is not None:
        of = f" of {np.dtype(dtype).name}" if dtype is not None else ""
        raise error(f"{where} is {_shape_text(shape)}{of}: {why}")


_REPR = reprlib.Repr()
_REPR.maxtuple = _REPR.maxlist = 10
_REPR.maxlong = _REPR.maxother = 80


def _shape_text(shape):
    # Cut short: a shape read from a file may hold a million entries.
    return _REPR.repr(shape)
