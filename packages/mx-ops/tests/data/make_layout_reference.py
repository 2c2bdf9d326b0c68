"""Writes layout_mxnet191.npz here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_layout_reference.py

For each case of layout_cases.py: output k as '<case>/out<k>'; for the
gradient cases the gradient of each input as '<case>/grad<i>' (head
gradient: layout_cases.grad_head)."""
import sys
from pathlib import Path

import numpy as np

import mxnet as mx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from layout_cases import CASES, GRAD_CASES, grad_head, inputs  # noqa: E402


def op(name):
    if name.startswith("_contrib_"):
        return getattr(mx.nd.contrib, name[len("_contrib_"):])
    return getattr(mx.nd, name, None) or getattr(mx.nd._internal, name)


def main():
    data, out = inputs(), {}
    for case, (name, args, params) in CASES.items():
        xs = [mx.nd.array(data[a], dtype=data[a].dtype) for a in args]
        grad = case in GRAD_CASES
        if grad:
            for x in xs:
                x.attach_grad()
        with mx.autograd.record():
            ys = op(name)(*xs, **params)
        ys = ys if isinstance(ys, list) else [ys]
        for k, y in enumerate(ys):
            out[f"{case}/out{k}"] = y.asnumpy()
        if grad:
            mx.autograd.backward(ys, [mx.nd.array(grad_head(y.shape), dtype=y.dtype) for y in ys])
            for i, x in enumerate(xs):
                out[f"{case}/grad{i}"] = x.grad.asnumpy()
    np.savez_compressed(HERE / "layout_mxnet191.npz", **out)


if __name__ == "__main__":
    main()
