"""GPU compute of the interleaved attention matmuls: cuBLAS batched GEMMs
by way of cupy.matmul on strided views of the interleaved projections
(float16 too), with the CPU kernels' conventions.  Importing this module
without CuPy raises ImportError."""
import math

import cupy


def compile_cases():
    """No kernel source of ours: cuBLAS does the work."""
    return []


def _store(out, value, req):
    if req == "add":
        out += value
    elif req != "null":
        out[...] = value


def _heads(x, heads, parts):
    """(S, B, heads*parts*D) -> a (B*heads, parts, S, D) view... as
    (parts, B*heads, S, D) views, one per part (q, k, v)."""
    s, b, e = x.shape
    d = e // (heads * parts)
    v = x.reshape(s, b, heads, parts, d).transpose(3, 1, 2, 0, 4)
    return [v[i].reshape(b * heads, s, d) for i in range(parts)], d


def _merge(y, seq, batch, heads):
    """(B*heads, S, D) -> (S, B, heads*D)."""
    d = y.shape[-1]
    return y.reshape(batch, heads, seq, d).transpose(2, 0, 1, 3).reshape(seq, batch, heads * d)


def _split_grads(parts, seq, batch, heads):
    """[(B*heads, S, D)] per part -> (S, B, heads*len(parts)*D)."""
    d = parts[0].shape[-1]
    st = cupy.stack([p.reshape(batch, heads, seq, d) for p in parts], axis=2)
    return st.transpose(3, 0, 1, 2, 4).reshape(seq, batch, heads * len(parts) * d)


def _t(x):
    return x.swapaxes(-1, -2)


def selfatt_qk(params, inputs, outputs, reqs):
    (q, k, _), d = _heads(inputs[0], params["heads"], 3)
    _store(outputs[0], cupy.matmul(q / math.sqrt(d), _t(k)), reqs[0])


def backward_selfatt_qk(params, inputs, outputs, reqs):
    g, x = inputs
    h = params["heads"]
    (q, k, v), d = _heads(x, h, 3)
    scale = 1.0 / math.sqrt(d)
    dq, dk = cupy.matmul(g, k) * scale, cupy.matmul(_t(g), q) * scale
    _store(outputs[0], _split_grads([dq, dk, cupy.zeros_like(v)], x.shape[0], x.shape[1], h),
           reqs[0])


def selfatt_valatt(params, inputs, outputs, reqs):
    x, att = inputs
    h = params["heads"]
    (_, _, v), _ = _heads(x, h, 3)
    _store(outputs[0], _merge(cupy.matmul(att, v), x.shape[0], x.shape[1], h), reqs[0])


def backward_selfatt_valatt(params, inputs, outputs, reqs):
    g, x, att = inputs
    h = params["heads"]
    (q, _, v), _ = _heads(x, h, 3)
    (go,), _ = _heads(g, h, 1)
    zero = cupy.zeros_like(q)
    _store(outputs[0], _split_grads([zero, zero, cupy.matmul(_t(att), go)], x.shape[0],
                                    x.shape[1], h), reqs[0])
    _store(outputs[1], cupy.matmul(go, _t(v)), reqs[1])


def encdec_qk(params, inputs, outputs, reqs):
    h = params["heads"]
    (q,), d = _heads(inputs[0], h, 1)
    (k, _), _ = _heads(inputs[1], h, 2)
    _store(outputs[0], cupy.matmul(q / math.sqrt(d), _t(k)), reqs[0])


def backward_encdec_qk(params, inputs, outputs, reqs):
    g, queries, kv = inputs
    h = params["heads"]
    (q,), d = _heads(queries, h, 1)
    (k, v), _ = _heads(kv, h, 2)
    scale = 1.0 / math.sqrt(d)
    _store(outputs[0], _merge(cupy.matmul(g, k) * scale, queries.shape[0], queries.shape[1], h),
           reqs[0])
    _store(outputs[1], _split_grads([cupy.matmul(_t(g), q) * scale, cupy.zeros_like(v)],
                                    kv.shape[0], kv.shape[1], h), reqs[1])


def encdec_valatt(params, inputs, outputs, reqs):
    kv, att = inputs
    h = params["heads"]
    (_, v), _ = _heads(kv, h, 2)
    _store(outputs[0], _merge(cupy.matmul(att, v), att.shape[1], kv.shape[1], h), reqs[0])


def backward_encdec_valatt(params, inputs, outputs, reqs):
    g, kv, att = inputs
    h = params["heads"]
    (k, v), _ = _heads(kv, h, 2)
    (go,), _ = _heads(g, h, 1)
    _store(outputs[0], _split_grads([cupy.zeros_like(k), cupy.matmul(_t(att), go)],
                                    kv.shape[0], kv.shape[1], h), reqs[0])
    _store(outputs[1], cupy.matmul(go, _t(v)), reqs[1])
