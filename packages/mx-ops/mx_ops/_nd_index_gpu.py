"""GPU compute of gather_nd, scatter_nd and _scatter_set_nd: CuPy's own
advanced indexing (a gather or scatter kernel of CuPy's), with the CPU
kernels' rules: indices C-cast to int64, negatives counted from the end,
one out of range an error before anything is written, and for a scatter
the last duplicate tuple wins.  Importing this module without CuPy raises
ImportError, and the GPU computes are then not registered."""
import cupy

from mx_engine.base import MXNetError
from mx_ops._cuda import scatter_add


def compile_cases():
    """No kernel sources of this module's own for the NVRTC check: the
    indexing kernels are CuPy's."""
    return []


def _tuples(op, indices, shape):
    """The index tuples as a tuple of int64 arrays, checked on the device
    (one synchronising read of a flag)."""
    m = indices.shape[0]
    idx = indices.astype(cupy.int64)
    dims = cupy.asarray(shape[:m], dtype=cupy.int64).reshape((m,) + (1,) * (idx.ndim - 1))
    idx = cupy.where(idx < 0, idx + dims, idx)
    if idx.size and bool(((idx < 0) | (idx >= dims)).any()):
        raise MXNetError(f"{op}: argument 'indices' holds an index out of range")
    return tuple(idx[j] for j in range(m))


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
        cupy.add.at(out, where, data)      # duplicates add up, as on the CPU
    else:
        out.fill(0)
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
