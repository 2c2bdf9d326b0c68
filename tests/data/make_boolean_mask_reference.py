"""Writes boolean_mask_reference.npz here with real MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_boolean_mask_reference.py

What MXNet's graph executor computes for symbols holding
``mx.sym.contrib.boolean_mask`` (a dynamic-shape operator: its output's
length is the number of nonzero mask values), bound with ``bind``:

- ``fc``: FullyConnected(num_hidden=3) over the masked rows of d (5, 4);
  two forward/backward passes with different masks, each on an executor
  bound to the same gradient arrays (d's with grad_req 'write',
  fc_weight's with 'add', so the second pass adds to the first).  One
  executor for both passes would do: MXNet 1.9.1's keeps the first pass's
  output shape (3 rows for a mask keeping 1) and fails a memory check at
  exit, so the reference binds anew.  Keys ``fc.<pass>.{mask,ograd,out,d_grad,
  fc_weight_grad,fc_bias_grad}`` plus the inputs ``fc.d``, ``fc.w``,
  ``fc.b``;
- ``sum``: sum(boolean_mask(d, i) * 2) for a mask keeping rows and one
  keeping none (``sum.<pass>.{mask,out}``).

``json`` is the -symbol.json MXNet writes for the fc symbol.
test_boolean_mask_executor.py runs the same on ours and compares.
"""
from pathlib import Path

import mxnet as mx
import numpy as np

OUT = Path(__file__).resolve().parent / "boolean_mask_reference.npz"


def main():
    rng = np.random.default_rng(7)
    ref = {}
    d = rng.normal(size=(5, 4)).astype("float32")
    w = rng.normal(size=(3, 4)).astype("float32")
    b = rng.normal(size=(3,)).astype("float32")
    ref.update({"fc.d": d, "fc.w": w, "fc.b": b})
    data, index = mx.sym.var("d"), mx.sym.var("i")
    fc = mx.sym.FullyConnected(mx.sym.contrib.boolean_mask(data, index), num_hidden=3, name="fc")
    ref["json"] = np.array(fc.tojson())
    grads = {"d": mx.nd.zeros((5, 4)), "fc_weight": mx.nd.ones((3, 4)),
             "fc_bias": mx.nd.zeros((3,))}
    for p, mask in enumerate([[1, 0, 2.5, 0, -1], [0, 1, 0, 0, 0]]):
        mask = np.array(mask, dtype="float32")
        ex = fc.bind(mx.cpu(), {"d": mx.nd.array(d), "i": mx.nd.array(mask),
                                "fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array(b)},
                     args_grad=grads, grad_req={"d": "write", "i": "null", "fc_weight": "add",
                                                "fc_bias": "write"})
        ex.forward(is_train=True)
        out = ex.outputs[0].asnumpy()
        ograd = rng.normal(size=out.shape).astype("float32")
        ex.backward(mx.nd.array(ograd))
        ref.update({f"fc.{p}.mask": mask, f"fc.{p}.ograd": ograd, f"fc.{p}.out": out,
                    f"fc.{p}.d_grad": grads["d"].asnumpy(),
                    f"fc.{p}.fc_weight_grad": grads["fc_weight"].asnumpy(),
                    f"fc.{p}.fc_bias_grad": grads["fc_bias"].asnumpy()})
    total = mx.sym.sum(mx.sym.contrib.boolean_mask(data, index) * 2)
    for p, mask in enumerate([[0, 0, 1, 1, 0], [0, 0, 0, 0, 0]]):
        mask = np.array(mask, dtype="float32")
        ex = total.bind(mx.cpu(), {"d": mx.nd.array(d), "i": mx.nd.array(mask)})
        ex.forward()
        ref.update({f"sum.{p}.mask": mask, f"sum.{p}.out": ex.outputs[0].asnumpy()})
    np.savez_compressed(OUT, **ref)


if __name__ == "__main__":
    main()
