"""The row_sparse messages of the distributed store (MXNet's PushRowSparse
and PullRowSparse): only the rows a push holds, or a pull asks for, travel.

A row message is raw bytes, nothing pickled: the row length (elements per
row, int64), then the row ids (int64, strictly increasing, counted from the
server's first row), then, in a push, those rows' values in the key's
dtype.  The request header's ARG word holds the number of rows, so the
server checks every size before it reads a value.  A key's slice on a
server is whole rows (_dist_keys.partition_rows), stored dense.
"""
import numpy as np

ID_BYTES = np.dtype(np.int64).itemsize


def pack(row_len, ids, values=None):
    """The message for ``ids`` (int64 array) and, in a push, ``values``
    (``len(ids)`` rows): one contiguous uint8 buffer."""
    head = ID_BYTES * (1 + len(ids))
    nbytes = head + (0 if values is None else values.nbytes)
    buf = np.empty(nbytes, np.uint8)
    words = buf[:head].view(np.int64)
    words[0] = row_len
    words[1:] = ids
    if values is not None:
        buf[head:] = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    return buf


def max_bytes(rows, size, itemsize):
    """The most bytes a row message for a slice of ``size`` elements can
    hold (every row): a bound checked before any buffer is allocated."""
    return ID_BYTES * (1 + rows) + (size * itemsize if rows else 0)


def unpack(buf, rows, dtype, size, with_values):
    """``(row_len, ids, values or None)`` of the message ``buf`` of ``rows``
    rows for a slice of ``size`` elements of ``dtype``; ValueError naming
    what does not fit."""
    head = ID_BYTES * (1 + rows)
    if buf.nbytes < head:
        raise ValueError(f"a message of {buf.nbytes} bytes cannot hold {rows} row ids")
    words = buf[:head].view(np.int64)
    row_len, ids = int(words[0]), words[1:]
    if row_len <= 0 or size % row_len:
        raise ValueError(f"row length {row_len} does not divide the slice's {size} elements")
    itemsize = np.dtype(dtype).itemsize
    expected = head + (rows * row_len * itemsize if with_values else 0)
    if buf.nbytes != expected:
        raise ValueError(f"a message of {rows} rows of {row_len} {np.dtype(dtype).name} "
                         f"needs {expected} bytes, got {buf.nbytes}")
    check_ids(ids, size // row_len)
    values = buf[head:].view(dtype).reshape(rows, row_len) if with_values else None
    return row_len, ids, values


def check_ids(ids, rows):
    """Row ids strictly increasing inside ``0 .. rows - 1``."""
    if len(ids) and (ids[0] < 0 or ids[-1] >= rows):
        bad = ids[(ids < 0) | (ids >= rows)][0]
        raise ValueError(f"row id {int(bad)} is outside 0..{rows - 1}")
    if len(ids) > 1 and not np.all(ids[1:] > ids[:-1]):
        at = int(np.argmax(ids[1:] <= ids[:-1]))
        raise ValueError(f"row ids are not strictly increasing at position {at + 1} "
                         f"({int(ids[at])} then {int(ids[at + 1])})")


def spans(ids, parts, row_len):
    """For each slice ``(server, server_key, lo, hi)`` (element ranges of
    whole rows): ``(server, server_key, first_row, a, b)``, ``ids[a:b]``
    being the sorted ``ids`` that fall in it."""
    out = []
    for server, skey, lo, hi in parts:
        first, stop = lo // row_len, hi // row_len
        a, b = (int(i) for i in np.searchsorted(ids, [first, stop]))
        out.append((server, skey, first, a, b))
    return out


def sum_rows(pushes, row_len, dtype):
    """The union of the pushes' ``(ids, values)`` (sorted) and each row's
    sum: a row_sparse sum, as MXNet's server merges row_sparse pushes."""
    ids = np.unique(np.concatenate([p[0] for p in pushes])) if pushes else \
        np.empty(0, np.int64)
    summed = np.zeros((len(ids), row_len), dtype)
    for pids, values in pushes:
        # each push's ids are distinct, so the fancy-indexed add is exact
        summed[np.searchsorted(ids, pids)] += values
    return ids, summed
