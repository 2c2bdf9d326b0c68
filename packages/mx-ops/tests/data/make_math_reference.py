"""Writes math_mxnet191.json here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_math_reference.py

What MXNet 1.9.1 gives, forward and gradient (autograd, out_grad ``og``),
for the element-wise math and loss operators of issue 15 that
test_math_ops.py compares with.  Inputs are fixed here; keys:

- ``leaky.<act>.<dtype>``: LeakyReLU(x, act_type) for selu and gelu: x, y, og, dx;
- ``rrelu_outputs``: how many outputs mx.nd.LeakyReLU(act_type='rrelu') returns;
- ``erfinv.<dtype>``, ``logical_not.<dtype>``: x, y (and dx for erfinv, og = 1);
- ``softmin.<case>``: x, params, y, og, dx;
- ``softmax_activation.<mode>``: x, y, og, dx;
- ``softmax_cross_entropy.<dtype>``: x, label, y, og, dx.
"""
import json
from pathlib import Path

import mxnet as mx
import numpy as np

OUT = Path(__file__).resolve().parent / "math_mxnet191.json"
rng = np.random.default_rng(15)


def run(fn, x, og=None, **kw):
    """(y, og, dx) of fn(x, **kw) under autograd."""
    a = mx.nd.array(x, dtype=x.dtype)
    a.attach_grad()
    with mx.autograd.record():
        y = fn(a, **kw)
    og = rng.standard_normal(y.shape).astype(x.dtype) if og is None else og
    y.backward(mx.nd.array(og, dtype=x.dtype))
    return y.asnumpy(), og, a.grad.asnumpy()


def tolist(d):
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def main():
    out = {}
    for dtype in ("float32", "float64"):
        x = np.concatenate([np.linspace(-4, 4, 33), rng.standard_normal(31) * 2]).astype(dtype)
        for act in ("selu", "gelu"):
            y, og, dx = run(lambda a: mx.nd.LeakyReLU(a, act_type=act), x)
            out[f"leaky.{act}.{dtype}"] = tolist(dict(x=x, y=y, og=og, dx=dx))
        e = np.array([-1, -0.999999, -0.9, -0.5, -1e-6, 0, 1e-6, 0.3, 0.5, 0.9, 0.99, 0.999999, 1,
                      1.5, -2], dtype)
        ok = np.abs(e) < 1
        y = mx.nd.erfinv(mx.nd.array(e, dtype=dtype)).asnumpy()
        _, _, dx = run(mx.nd.erfinv, e[ok], og=np.ones(ok.sum(), dtype))
        out[f"erfinv.{dtype}"] = tolist(dict(x=e, y=y, x_grad=e[ok], dx=dx))
    for dtype in ("float32", "int32", "uint8"):
        x = np.array([0, 1, 2, 0, 5, 0], dtype)
        if dtype == "float32":
            x = np.array([0, -0.0, 0.5, -2, np.inf, np.nan], dtype)
        y = mx.nd.logical_not(mx.nd.array(x, dtype=dtype)).asnumpy()
        out[f"logical_not.{dtype}"] = tolist(dict(x=x, y=y))
    y3 = rng.standard_normal((2, 3, 4)).astype("float32")
    for case, kw in (("default", {}), ("axis1_t2", dict(axis=1, temperature=2.0)),
                     ("axis0", dict(axis=0))):
        y, og, dx = run(mx.nd.softmin, y3, **kw)
        out[f"softmin.{case}"] = tolist(dict(x=y3, params=kw, y=y, og=og, dx=dx))
    for mode in ("instance", "channel"):
        y, og, dx = run(mx.nd.SoftmaxActivation, y3, mode=mode)
        out[f"softmax_activation.{mode}"] = tolist(dict(x=y3, y=y, og=og, dx=dx))
    for dtype in ("float32", "float64"):
        x = rng.standard_normal((5, 7)).astype(dtype) * 3
        label = np.array([0, 6, 3, 2.7, 1], dtype)
        a, lab = mx.nd.array(x, dtype=dtype), mx.nd.array(label, dtype=dtype)
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.softmax_cross_entropy(a, lab)
        og = np.array([1.5], dtype)
        y.backward(mx.nd.array(og, dtype=dtype))
        out[f"softmax_cross_entropy.{dtype}"] = tolist(dict(
            x=x, label=label, y=y.asnumpy(), og=og, dx=a.grad.asnumpy()))
    outs = mx.nd.LeakyReLU(mx.nd.array(np.ones(4)), act_type="rrelu")
    out["rrelu_outputs"] = len(outs) if isinstance(outs, list) else 1
    text = json.dumps(out)                  # NaN and Infinity as Python's json writes them
    OUT.write_text(text + "\n")
    print(f"wrote {OUT} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
