"""What an NDArray index key selects, worked out on shapes alone.

``basic_index(shape, key)`` turns a key of ints, slices, ``None`` and
``...`` into per-axis (start, stop, step) ranges plus the result's shape,
and says whether the selection is one contiguous block of the row-major
array (then NDArray returns a view, as MXNet does, and writes go straight
into it); other selections go through the slice operators.

``advanced_index(shape, key, part_shape)`` lays out a key holding index
arrays (lists, tuples, ranges, NumPy arrays, NDArrays) mixed with ints,
slices, ``None`` and ``...`` as NumPy does: the index arrays and ints
broadcast together into one block, which stays in place when they are
adjacent and moves to the front when not; each indexed axis gets an index
array of the result's shape for gather_nd / _scatter_set_nd.
"""
from dataclasses import dataclass

import numpy as np

__all__ = ["BasicIndex", "basic_index", "is_advanced", "has_index_arrays", "host_index_tuples",
           "AdvancedIndex", "advanced_index", "host_indices"]

_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


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
    """Index arrays (NDArray, NumPy, lists, ranges) select by gathering, not
    slicing (a tuple is a key of several parts)."""
    return not isinstance(key, tuple) and _is_array_part(key)


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
    arrays = [_integers(part, axis) for axis, part in enumerate(parts)]
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError(f"NDArray index: the index arrays' shapes "
                         f"{[a.shape for a in arrays]} do not broadcast together") from None
    out = np.empty((len(arrays),) + arrays[0].shape, np.int64)
    for axis, (a, n) in enumerate(zip(arrays, shape)):
        out[axis] = _in_bounds(a, n, axis)
    return out


def _integers(part, axis):
    """A host index part as an int64 array (booleans and floats refused)."""
    if isinstance(part, (slice, type(None), type(Ellipsis))):
        raise IndexError("NDArray index: index arrays cannot be mixed with slices, None "
                         "or ...; index every leading axis with an array or an int")
    a = np.asarray(part)
    if a.dtype == np.bool_ or (a.dtype.kind not in "iu" and a.size):
        raise IndexError(f"NDArray index arrays must hold integers, got {a.dtype} for "
                         f"axis {axis}")
    return a.astype(np.int64)


def _in_bounds(a, n, axis):
    """``a`` checked against an axis of size ``n``, negatives counted from the end."""
    bad = (a < -n) | (a >= n)
    if bad.any():
        raise IndexError(f"index {int(a[bad].flat[0])} is out of bounds for axis {axis} "
                         f"with size {n}")
    return a % n if n else a


def host_indices(part, n, axis):
    """One axis's host part of an advanced key (an int, a slice, a list or
    a NumPy array of ints) as checked int64 indices."""
    if isinstance(part, slice):
        return np.arange(*part.indices(n), dtype=np.int64)
    if isinstance(part, range):
        part = np.arange(part.start, part.stop, part.step)
    return _in_bounds(_integers(part, axis), n, axis)


@dataclass(frozen=True)
class AdvancedIndex:
    view_shape: tuple      # the array's shape with the key's None axes inserted
    parts: tuple           # per indexed leading axis of that view: an int, slice or array
    layouts: tuple         # per part: the shape it is reshaped to, to broadcast to `result`
    result: tuple          # the shape every axis's index array is broadcast to
    shape: tuple           # the selection: result + the view's unindexed trailing axes


def _is_array_part(k):
    return isinstance(k, (list, tuple, range, np.ndarray)) or (
        hasattr(k, "shape") and hasattr(k, "dtype") and not isinstance(k, np.generic))


def _checked_parts(key):
    """The key as a tuple of parts MXNet accepts; ValueError (MXNet's) for others."""
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if not (isinstance(k, _BASIC) or _is_array_part(k)):
            raise ValueError(f"NDArray does not support slicing with key {k} of type "
                             f"{type(k)}.")
    return key


def advanced_index(shape, key, part_shape):
    """The AdvancedIndex of a ``key`` holding index arrays; ``part_shape``
    gives an index array's shape (NDArrays stay on their device).  A 1-D
    boolean host mask becomes the indices of its True entries."""
    key = _checked_parts(key)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("Cannot use more than one ellipsis (`...`) for indexing: at most "
                         "one '...' is allowed")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > len(shape):
        raise IndexError(f"too many indices ({used}) for array with {len(shape)} dimensions")
    view_shape, parts, axis = [], [], 0
    for k in key:
        if k is Ellipsis:
            take = len(shape) - used
            view_shape += shape[axis:axis + take]
            parts += [slice(None)] * take
            axis += take
        elif k is None:
            view_shape.append(1)
            parts.append(slice(None))
        else:
            n = shape[axis]
            if isinstance(k, (list, tuple, np.ndarray)):
                mask = np.asarray(k)
                if mask.dtype == np.bool_:
                    if mask.shape != (n,):
                        raise IndexError(f"boolean index of shape {mask.shape} does not match "
                                         f"axis {axis} of size {n}")
                    k = np.flatnonzero(mask)
            view_shape.append(n)
            parts.append(k)
            axis += 1
    view_shape += shape[axis:]
    adv = [i for i, k in enumerate(parts) if not isinstance(k, slice)]
    m = len(parts)
    while m > adv[-1] + 1 and parts[m - 1].indices(view_shape[m - 1]) == (0, view_shape[m - 1], 1):
        m -= 1      # gather_nd keeps the trailing unindexed axes itself
    parts = parts[:m]
    adv_shapes = [() if isinstance(parts[i], (int, np.integer)) else part_shape(parts[i])
                  for i in adv]
    try:
        block = np.broadcast_shapes(*adv_shapes)
    except ValueError:
        raise IndexError(f"NDArray index: the index arrays' shapes {adv_shapes} do not "
                         f"broadcast together") from None
    sliced = [i for i in range(m) if i not in adv]
    lengths = {i: len(range(*parts[i].indices(view_shape[i]))) for i in sliced}
    at = sum(i < adv[0] for i in sliced) if adv == list(range(adv[0], adv[-1] + 1)) else 0
    order = sliced[:at] + [None] + sliced[at:]      # None: the block of advanced indices
    result = []
    for i in order:
        result += block if i is None else [lengths[i]]
    layouts = []
    for i in range(m):
        layout = [1] * len(result)
        if i in lengths:
            pos = order.index(i) + (len(block) - 1 if order.index(i) > at else 0)
            layout[pos] = lengths[i]
        else:
            s = adv_shapes[adv.index(i)]
            layout[at + len(block) - len(s):at + len(block)] = s
        layouts.append(tuple(layout))
    return AdvancedIndex(tuple(view_shape), tuple(parts), tuple(layouts), tuple(result),
                         tuple(result) + tuple(view_shape[m:]))


def _entries(key, ndim):
    """The key as a list over the array's axes plus the None markers,
    with ``...`` expanded."""
    key = _checked_parts(key)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("Cannot use more than one ellipsis (`...`) for indexing: at most "
                         "one '...' is allowed")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > ndim:
        raise IndexError(f"too many indices ({used}) for array with {ndim} dimensions")
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
