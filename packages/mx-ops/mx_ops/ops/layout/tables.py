"""The offset tables of the layout operators' gather (layout_cpu.h).

An operator describes its output as a row-major VIEW shape (the output's,
with extra axes where one output axis walks two input axes: tile's
(reps, n), repeat's (n, repeats), depth_to_space's (H, block)) and one
int64 table per view axis: the input offset (in elements) that index i of
that axis adds, or FILL for Pad's constant.  ``pack`` simplifies the view
(drops axes of one entry, merges neighbours that walk memory as one axis),
cuts the innermost axis into runs of constant step, and packs the block the
CPU kernel and its CuPy twin read.  Everything is NumPy over whole tables:
no Python loop runs per element."""
import struct

import numpy as np

FILL = np.iinfo(np.int64).min
_HEADER = struct.Struct("=qqqd")                  # mxop::TableHeader


def strides(shape):
    """Row-major strides of ``shape``, in elements."""
    out, k = [], 1
    for n in reversed(tuple(shape)):
        out.append(k)
        k *= n
    return out[::-1]


def arith(n, step, start=0):
    """The table of an axis of ``n`` entries walking memory by ``step``."""
    return start + step * np.arange(n, dtype=np.int64)


def _step(t):
    """The common step of table ``t`` (no FILL), or None."""
    if len(t) < 2:
        return 0
    d = np.diff(t)
    return int(d[0]) if (d == d[0]).all() else None


def _simplify(shape, tables, base):
    """Drops one-entry axes (their offset goes into ``base``) and merges an
    axis into the next where together they walk memory by one step."""
    out_shape, out_tables = [], []
    for n, t in zip(shape, tables):
        if n == 1 and t[0] != FILL:
            base += int(t[0])
            continue
        out_shape.append(n)
        out_tables.append(np.asarray(t, np.int64))
    if 0 in out_shape:
        return [0], [np.zeros(0, np.int64)], 0
    if not out_shape:
        return [1], [np.zeros(1, np.int64)], base
    k = len(out_shape) - 1
    while k > 0:
        a, b = out_tables[k - 1], out_tables[k]
        sa, sb = (None, None) if FILL in a or FILL in b else (_step(a), _step(b))
        if sa is not None and sb is not None and sa == sb * len(b):
            out_tables[k - 1:k + 1] = [arith(len(a) * len(b), sb, int(a[0] + b[0]))]
            out_shape[k - 1:k + 1] = [len(a) * len(b)]
        k -= 1
    return out_shape, out_tables, base


def _runs(t):
    """The innermost table as runs (len, src, step, fill): a new run starts
    where the step into an entry differs from the step into the one before,
    or where FILL starts or stops."""
    n = len(t)
    if n == 0:
        return np.zeros((0, 4), np.int64)
    fill = t == FILL
    safe = np.where(fill, 0, t)
    step = np.diff(safe)
    brk = np.zeros(n, bool)
    brk[0] = True
    # an entry right after a fill starts a run whatever its step
    brk[2:] = (step[1:] != step[:-1]) & (fill[1:-1] == fill[:-2])
    brk[1:] |= fill[1:] != fill[:-1]
    starts = np.flatnonzero(brk)
    lens = np.diff(np.append(starts, n))
    nxt = np.minimum(starts + 1, n - 1)
    steps = np.where(lens > 1, safe[nxt] - safe[starts], 0)
    return np.stack([lens, safe[starts], steps, fill[starts].astype(np.int64)], 1)


def pack(shape, tables, base=0, value=0.0):
    """The packed block of layout_cpu.h for a view ``shape`` with one table
    per axis; FILL entries read ``value``."""
    shape, tables, base = _simplify(list(shape), list(tables), base)
    runs = _runs(tables[-1])
    return (_HEADER.pack(len(shape), len(runs), base, float(value))
            + np.asarray(shape, np.int64).tobytes() + np.concatenate(tables).tobytes()
            + runs.tobytes())


def unpack(block):
    """(shape, tables, base, value) of a packed block (for the GPU twin)."""
    ndim, nruns, base, value = _HEADER.unpack_from(block)
    rest = np.frombuffer(block, np.int64, offset=_HEADER.size)
    shape = [int(n) for n in rest[:ndim]]
    return shape, rest[ndim:ndim + sum(shape)], base, value
