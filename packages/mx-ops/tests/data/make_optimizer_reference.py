"""Writes optimizer_mxnet191.npz here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_optimizer_reference.py

For each case of optimizer_cases.py, after its steps: every input as
'<case>/in<i>' (the mutated states, the weights updated in place) and each
output of the last call as '<case>/out<k>'."""
import sys
from pathlib import Path

import numpy as np

import mxnet as mx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from optimizer_cases import CASES, gradient_positions, inputs  # noqa: E402


def run(name):
    case = CASES[name]
    fn = getattr(mx.nd, case["op"])
    xs = [mx.nd.array(x, dtype=x.dtype) for x in inputs(name)]
    nout = case.get("num_outputs", 1)
    weights = [i for i, (role, _, _) in enumerate(case["inputs"]) if role == "weight"]
    ys = None
    for step in range(case["steps"]):
        if step:
            fresh = inputs(name, step)
            for i in gradient_positions(name):
                xs[i][:] = fresh[i]
        if case["inplace"]:
            outs = [xs[i] for i in weights[:nout]]
            ys = fn(*xs, out=outs if nout > 1 else outs[0], **case["params"])
        else:
            ys = fn(*xs, **case["params"])
    ys = ys if isinstance(ys, list) else [ys]
    out = {f"{name}/in{i}": x.asnumpy() for i, x in enumerate(xs)}
    out.update({f"{name}/out{k}": y.asnumpy() for k, y in enumerate(ys)})
    return out


def main():
    out = {}
    for name in CASES:
        out.update(run(name))
    np.savez_compressed(HERE / "optimizer_mxnet191.npz", **out)


if __name__ == "__main__":
    main()
