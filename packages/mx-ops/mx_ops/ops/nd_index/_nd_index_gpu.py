"""GPU compute of gather_nd, scatter_nd and _scatter_set_nd: CuPy's own
advanced indexing (a gather or scatter kernel of CuPy's), with the CPU
kernels' rules: indices C-cast to int64 (by the CPU's rule: NaN and floats
out of range give INT64_MIN, so they are out of range here too), negatives
counted from the end, one out of range an error before anything is
written, and for a scatter the last duplicate tuple wins -- CuPy stores an undefined one of several
values aimed at one element, so the earlier duplicates are dropped first.
Importing this module without CuPy raises ImportError, and the GPU
computes are then not registered."""
import math

import cupy

from mx_engine.base import MXNetError
from mx_ops.core._cuda import scatter_add
from mx_ops.ops.init._init_gpu import convert


def compile_cases():
    """No kernel sources of this module's own for the NVRTC check: the
    indexing kernels are CuPy's."""
    return []


def _tuples(op, indices, shape):
    """The index tuples as a tuple of int64 arrays, checked on the device
    (one synchronising read of a flag)."""
    m = indices.shape[0]
    idx = convert(indices, cupy.int64)
    dims = cupy.asarray(shape[:m], dtype=cupy.int64).reshape((m,) + (1,) * (idx.ndim - 1))
    idx = cupy.where(idx < 0, idx + dims, idx)
    if idx.size and bool(((idx < 0) | (idx >= dims)).any()):
        raise MXNetError(f"{op}: argument 'indices' holds an index out of range")
    return tuple(idx[j] for j in range(m))


def _last_wins(where, rows, shape):
    """The index tuples ``where`` (each of shape Y) and the rows aimed at
    them (shape Y + shape[M:]), flattened to one axis, with every tuple that
    a later one repeats left out: the row the CPU's serial scatter ends
    with is then the only one stored.  The last position of each tuple is
    found with cupy.maximum.at over the tuples' flat indices."""
    m = len(where)
    flat = [w.reshape(-1) for w in where]
    lin = flat[0]
    for j in range(1, m):
        lin = lin * shape[j] + flat[j]
    pos = cupy.arange(1, lin.size + 1, dtype=cupy.uint64)    # 0: no tuple
    last = cupy.zeros(math.prod(shape[:m]), cupy.uint64)
    cupy.maximum.at(last, lin, pos)
    keep = last[lin] == pos
    rows = rows.reshape((lin.size,) + tuple(shape[m:]))[keep]
    return tuple(f[keep] for f in flat), rows


def gather(params, inputs, outputs, reqs):
    data, indices = inputs
    out = outputs[0]
    if reqs[0] == "null":
        return
    rows = data[_tuples("gather_nd", indices, data.shape)]
    if reqs[0] == "add":
        out += rows
    else:
        out[...] = rows


def scatter(params, inputs, outputs, reqs):
    data, indices = inputs
    out = outputs[0]
    if reqs[0] == "null":
        return
    where = _tuples("scatter_nd", indices, out.shape)
    if reqs[0] == "add":
        scatter_add(out, where, data)      # duplicates add up, as on the CPU
    else:
        out.fill(0)
        where, data = _last_wins(where, data, out.shape)
        out[where] = data


def scatter_set(params, inputs, outputs, reqs):
    lhs, rhs, indices = inputs
    out = outputs[0]
    if reqs[0] == "null":
        return
    if reqs[0] == "add":
        raise MXNetError("_scatter_set_nd: req 'add' is not supported by an assignment")
    where = _tuples("_scatter_set_nd", indices, lhs.shape)
    if out.data.ptr != lhs.data.ptr:
        out[...] = lhs
    where, rhs = _last_wins(where, rhs, lhs.shape)
    out[where] = rhs


def gather_backward(params, inputs, outputs, reqs):
    """_backward_gather_nd: zeros unless req is 'add', then the rows of the
    output gradient added at their tuples (duplicates accumulate)."""
    g, indices = inputs[0], inputs[1]
    out = outputs[0]
    if reqs[0] == "null":
        return
    where = _tuples("_backward_gather_nd", indices, out.shape)
    if reqs[0] != "add":
        out.fill(0)
    scatter_add(out, where, g)
