"""GPU compute of pick (batch_take), _backward_pick and fill_element_0index
with the semantics of pick_cpu.h, through CuPy's indexing: an index of any
dtype is C-cast to int64 (mx_ops.ops.init._init_gpu.convert: floats
truncate), then clipped or wrapped; the parameters come from the very
PickParam block mx_ops.ops.index.pick packs for the CPU kernel.  Importing
this module without CuPy raises ImportError."""
import math

import cupy
import numpy

from mx_ops.ops.init._init_gpu import convert

_PICK_T = numpy.dtype([("axis", "<i8"), ("mode", "<i8")])          # mxop::PickParam


def compile_cases():
    """No kernel sources of its own: CuPy's indexing does the work."""
    return []


def _store(out, value, req):
    if req == "add":
        out += value.astype(out.dtype)
    elif req != "null":
        out[...] = value.astype(out.dtype)


def _columns(idx, n, mode, rows):
    """The bounded int64 column of each row, shaped (outer, inner)."""
    j = convert(idx, cupy.int64).reshape(rows)
    return cupy.mod(j, n) if mode == 1 else cupy.clip(j, 0, n - 1)


def _view(shape, axis):
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def pick(pack):
    """pick's (batch_take's) compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        data, idx, out = inputs[0], inputs[1], outputs[0]
        if reqs[0] == "null" or out.size == 0:
            return
        p = numpy.frombuffer(pack(params, [data.shape, idx.shape]), _PICK_T)[0]
        outer, n, inner = _view(data.shape, int(p["axis"]))
        j = _columns(idx, n, int(p["mode"]), (outer, 1, inner))
        got = cupy.take_along_axis(data.reshape(outer, n, inner), j, axis=1)
        _store(out, got.reshape(out.shape), reqs[0])
    return run


def pick_backward(pack):
    """_backward_pick's compute: zeros (unless req is 'add') with each
    gradient at the position it was picked from."""
    def run(params, inputs, outputs, reqs):
        g, idx, out = inputs[0], inputs[1], outputs[0]
        if reqs[0] == "null" or out.size == 0:
            return
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _PICK_T)[0]
        outer, n, inner = _view(out.shape, int(p["axis"]))
        j = _columns(idx, n, int(p["mode"]), (outer, 1, inner))
        grad = cupy.zeros((outer, n, inner), out.dtype)
        cupy.put_along_axis(grad, j, g.reshape(outer, 1, inner), axis=1)
        _store(out, grad.reshape(out.shape), reqs[0])
    return run


def fill_element_0index(params, inputs, outputs, reqs):
    """fill_element_0index's compute: lhs with column int(rhs[i]) of row i
    replaced by mhs[i] (an index outside the row changes nothing)."""
    lhs, mhs, rhs = inputs
    if reqs[0] == "null" or lhs.size == 0:
        return
    j = convert(rhs, cupy.int64).reshape(-1, 1)
    cols = cupy.arange(lhs.shape[1])[None, :]
    _store(outputs[0], cupy.where(cols == j, mhs.reshape(-1, 1), lhs), reqs[0])
