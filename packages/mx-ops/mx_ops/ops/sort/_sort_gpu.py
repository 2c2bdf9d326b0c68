"""GPU compute of topk (sort, argsort) and _backward_topk with the
semantics of sort_cpu.h, through CuPy's sorting (thrust): a stable
ascending argsort (NaN last, as the CPU's largest key) along the last axis
of a (rows, n) view; descending order sorts the reversed row and reverses
the result, which keeps ties in index order.  The parameters come from the
very TopKParam block mx_ops.ops.sort.sort packs for the CPU kernel.
Importing this module without CuPy raises ImportError."""
import math

import cupy
import numpy

_TOPK_T = numpy.dtype([("axis", "<i8"), ("k", "<i8"), ("ret", "<i8"), ("asc", "<i8")])
_VALUE, _INDICES, _MASK, _BOTH = range(4)                 # mxop::TopKRet


def compile_cases():
    """No kernel sources of its own: CuPy's sort and indexing do the work."""
    return []


def _rows(shape, axis):
    """(outer, n, inner) of the data around the axis (-1: flattened)."""
    if axis < 0:
        return 1, math.prod(shape), 1
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _store(out, value, req):
    if req == "add":
        out += value.astype(out.dtype)
    elif req != "null":
        out[...] = value.astype(out.dtype)


def _order(x, asc):
    """Stable argsort of x (rows, n) along its last axis, ascending or
    descending, ties in index order."""
    if asc:
        return cupy.argsort(x, axis=-1)
    n = x.shape[-1]
    return (n - 1 - cupy.argsort(x[:, ::-1], axis=-1))[:, ::-1]


def topk(pack):
    """topk's (sort's, argsort's) compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        data = inputs[0]
        p = numpy.frombuffer(pack(params, [data.shape]), _TOPK_T)[0]
        axis, k, ret = int(p["axis"]), int(p["k"]), int(p["ret"])
        outer, n, inner = _rows(data.shape, axis)
        if outer * n * inner == 0:
            return
        # (outer * inner, n): the axis last; float16 sorts through float32
        x = data.reshape(outer, n, inner).transpose(0, 2, 1).reshape(-1, n)
        keys = x.astype(cupy.float32) if x.dtype == cupy.float16 else x
        idx = _order(keys, bool(p["asc"]))[:, :k]

        def back(a):                               # (rows, k) -> the output's layout
            return a.reshape(outer, inner, k).transpose(0, 2, 1).reshape(outputs[0].shape)

        if ret == _MASK:
            mask = cupy.zeros_like(x)
            cupy.put_along_axis(mask, idx, 1, axis=-1)
            _store(outputs[0], mask.reshape(outer, inner, n).transpose(0, 2, 1)
                   .reshape(data.shape), reqs[0])
        elif ret == _INDICES:
            _store(outputs[0], back(idx), reqs[0])
        else:
            _store(outputs[0], back(cupy.take_along_axis(x, idx, axis=-1)), reqs[0])
            if len(outputs) > 1:
                _store(outputs[1], back(idx), reqs[1])
    return run


def topk_backward(pack):
    """_backward_topk's compute: zeros (unless req is 'add'), then each
    row's gradient added at the indices the forward selected."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        g, idx, out = inputs[0], inputs[1], outputs[0]
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _TOPK_T)[0]
        axis, k = int(p["axis"]), int(p["k"])
        outer, n, inner = _rows(out.shape, axis)
        grad = cupy.zeros((outer * inner, n), out.dtype)
        if grad.size:
            j = cupy.clip(idx.reshape(outer, k, inner).transpose(0, 2, 1).reshape(-1, k)
                          .astype(cupy.int64), 0, n - 1)
            gv = g.reshape(outer, k, inner).transpose(0, 2, 1).reshape(-1, k)
            cupy.put_along_axis(grad, j, gv, axis=-1)     # distinct within a row
        _store(out, grad.reshape(outer, inner, n).transpose(0, 2, 1).reshape(out.shape),
               reqs[0])
    return run
