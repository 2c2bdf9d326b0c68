"""What an NDArray index key selects, worked out on shapes alone.

``basic_index(shape, key)`` turns a key of ints, slices, ``None`` and
``...`` into per-axis (start, stop, step) ranges plus the result's shape,
and says whether the selection is one contiguous block of the row-major
array (then NDArray returns a view, as MXNet does, and writes go straight
into it); other selections go through the slice operators.
"""
from dataclasses import dataclass

import numpy as np

__all__ = ["BasicIndex", "basic_index", "is_advanced", "has_index_arrays", "host_index_tuples"]


@dataclass(frozen=True)
class BasicIndex:
    ranges: tuple          # (start, stop, step) per axis of the array
    kept_shape: tuple      # the region, every axis kept (ints as size 1)
    shape: tuple           # the result: int axes dropped, None axes added
    contiguous: bool       # one block of the row-major array
    offset: int            # its first element, when contiguous

    @property
    def begin(self):
        return tuple(r[0] for r in self.ranges)

    @property
    def end(self):
        # A negative step that runs to the front needs None, not -1.
        return tuple(None if r[1] < 0 else r[1] for r in self.ranges)

    @property
    def step(self):
        return tuple(r[2] for r in self.ranges)


def is_advanced(key):
    """Index arrays (NDArray, NumPy, lists) select by gathering, not slicing."""
    return not isinstance(key, (int, np.integer, slice, type(None), type(Ellipsis), tuple))


def has_index_arrays(key):
    """Whether the key holds an index array, alone or in a tuple."""
    if isinstance(key, tuple):
        return any(is_advanced(k) for k in key)
    return is_advanced(key)


def host_index_tuples(parts, shape):
    """Index arrays and ints given on the host (lists, NumPy arrays) as one
    int64 array of shape (M, Y...): broadcast together, bounds-checked per
    axis, negatives counted from the end.  IndexError names the axis."""
    if len(parts) > len(shape):
        raise IndexError(f"NDArray index: too many indices ({len(parts)}) for an array of "
                         f"{len(shape)} dimension(s)")
    arrays = []
    for axis, part in enumerate(parts):
        if isinstance(part, (slice, type(None), type(Ellipsis))):
            raise IndexError("NDArray index: index arrays cannot be mixed with slices, None "
                             "or ...; index every leading axis with an array or an int")
        a = np.asarray(part)
        if a.dtype == np.bool_ or (a.dtype.kind not in "iu" and a.size):
            raise IndexError(f"NDArray index arrays must hold integers, got {a.dtype} for "
                             f"axis {axis}")
        arrays.append(a.astype(np.int64))
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError(f"NDArray index: the index arrays' shapes "
                         f"{[a.shape for a in arrays]} do not broadcast together") from None
    out = np.empty((len(arrays),) + arrays[0].shape, np.int64)
    for axis, (a, n) in enumerate(zip(arrays, shape)):
        bad = (a < -n) | (a >= n)
        if bad.any():
            raise IndexError(f"index {int(a[bad].flat[0])} is out of bounds for axis {axis} "
                             f"with size {n}")
        out[axis] = a % n if n else a
    return out


def _entries(key, ndim):
    """The key as a list over the array's axes plus the None markers,
    with ``...`` expanded."""
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not isinstance(
                k, (int, np.integer, slice, type(None), type(Ellipsis))):
            raise IndexError(f"NDArray index: {k!r} inside a tuple is not supported; use ints, "
                             f"slices, None and ..., or one index array on its own")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("NDArray index: at most one '...' is allowed")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > ndim:
        raise IndexError(f"NDArray index: too many indices ({used}) for an array of {ndim} "
                         f"dimension(s)")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - used) + key[i + 1:]
    else:
        key = key + (slice(None),) * (ndim - used)
    return key


def basic_index(shape, key):
    """The BasicIndex of ``key`` on an array of ``shape``; IndexError names
    the axis and bound of an index out of range."""
    shape = tuple(shape)
    ranges, kept, out = [], [], []
    axis = 0
    for k in _entries(key, len(shape)):
        if k is None:
            out.append(1)
            continue
        n = shape[axis]
        if isinstance(k, slice):
            r = k.indices(n)
            size = len(range(*r))
            out.append(size)
        else:
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            r, size = (i, i + 1, 1), 1
        ranges.append(r)
        kept.append(size)
        axis += 1
    contiguous, offset = _block(shape, ranges, kept)
    return BasicIndex(tuple(ranges), tuple(kept), tuple(out), contiguous, offset)


def _block(shape, ranges, kept):
    """Whether the region is one row-major block, and its first element:
    leading axes of one element, then one step-1 range, then whole axes."""
    if 0 in kept:
        return True, 0
    d = 0
    while d < len(shape) and kept[d] == 1:
        d += 1
    if d < len(shape) and ranges[d][2] != 1:
        return False, 0
    if any(ranges[e] != (0, shape[e], 1) for e in range(d + 1, len(shape))):
        return False, 0
    offset, stride = 0, 1
    for (start, _, _), n in zip(reversed(ranges), reversed(shape)):
        offset += start * stride
        stride *= n
    return True, offset
