"""GPU compute of the sequence family, as CuPy array expressions over the
(steps, batch, rest) view of sequence_cpu.h: a step mask per (t, b) for
SequenceMask, a gathered step index for SequenceReverse and SequenceLast.
Importing this module without CuPy raises ImportError."""
import cupy


def compile_cases():
    """No RawKernel source: CuPy's own elementwise kernels run these."""
    return []


def _view(params, data):
    """data as (T, B, rest) for its axis (swapped for axis 1), and the lengths."""
    axis = params["axis"]
    v = data.reshape(data.shape[:2] + (-1,))
    return v.swapaxes(0, 1) if axis else v


def _lengths(params, inputs, data, at):
    T, B = data.shape[params["axis"]], data.shape[1 - params["axis"]]
    if not params["use_sequence_length"]:
        return cupy.full(B, T, cupy.int64)
    return cupy.clip(inputs[at].astype(cupy.float64).astype(cupy.int64), 0, T)


def _put(out_view, value, req):
    if req == "add":
        out_view += value
    else:
        out_view[...] = value


def _mask(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x = _view(params, inputs[0])
    lens = _lengths(params, inputs, inputs[0], 1)
    keep = cupy.arange(x.shape[0])[:, None, None] < lens[None, :, None]
    _put(_view(params, outputs[0]), cupy.where(keep, x, x.dtype.type(params["value"])), reqs[0])


def _reverse(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x = _view(params, inputs[0])
    lens = _lengths(params, inputs, inputs[0], 1)
    t = cupy.arange(x.shape[0])[:, None]
    src = cupy.where(t < lens[None, :], lens[None, :] - 1 - t, t)
    _put(_view(params, outputs[0]), x[src, cupy.arange(x.shape[1])[None, :]], reqs[0])


def _last(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x = _view(params, inputs[0])
    lens = _lengths(params, inputs, inputs[0], 1)
    at = cupy.maximum(lens - 1, 0)
    _put(outputs[0].reshape(x.shape[1], -1), x[at, cupy.arange(x.shape[1])], reqs[0])


def _last_backward(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    if reqs[0] != "add":
        outputs[0].fill(0)
    g = _view(params, outputs[0])
    lens = _lengths(params, inputs, inputs[1], 2)
    at = cupy.maximum(lens - 1, 0)
    b = cupy.arange(g.shape[1])
    g[at, b] += inputs[0].reshape(g.shape[1], -1)


SequenceMask, SequenceReverse = _mask, _reverse
SequenceLast, _backward_SequenceLast = _last, _last_backward
