"""Writes index_ops_mxnet191.npz here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_index_ops_reference.py

What MXNet 1.9.1 gives for the creation, diagonal, index and histogram
operators on the edge cases test_index_ops.py checks: every entry is
``<case>.<name>`` (inputs ``in<i>``, outputs ``out<i>``, input gradients
``grad<i>`` for a head gradient ``ograd``), or ``<case>.error`` holding the
message when MXNet refuses the call.  The cases themselves are in
index_ops_cases.py, which the tests read too.
"""
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from index_ops_cases import CASES  # noqa: E402

OUT = HERE / "index_ops_mxnet191.npz"


def run(mx, case, store):
    name, op, inputs, params, ograd = case
    fn = getattr(mx.nd, op, None) or getattr(mx.nd._internal, op, None)
    if fn is None:
        fn = getattr(mx.nd.contrib, op.replace("_contrib_", ""))
    arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    for i, x in enumerate(inputs):
        store[f"{name}.in{i}"] = x
    try:
        if ograd is None:
            outs = fn(*arrays, **params)
        else:
            for a in arrays:
                a.attach_grad()
            with mx.autograd.record():
                outs = fn(*arrays, **params)
            outs.backward(mx.nd.array(ograd, dtype=ograd.dtype))
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        for i, o in enumerate(outs):
            store[f"{name}.out{i}"] = o.asnumpy()
        if ograd is not None:
            store[f"{name}.ograd"] = ograd
            for i, a in enumerate(arrays):
                store[f"{name}.grad{i}"] = a.grad.asnumpy()
    except mx.base.MXNetError as e:
        store[f"{name}.error"] = np.array(str(e).strip().splitlines()[-1])


def main():
    import mxnet as mx
    store = {}
    for case in CASES:
        run(mx, case, store)
    np.savez_compressed(OUT, **store)
    print(f"wrote {len(store)} arrays to {OUT}")


if __name__ == "__main__":
    main()
