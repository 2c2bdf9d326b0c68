"""Writes autograd_reference.npz here with real MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_autograd_reference.py

MXNet runs benchmarks/graph_nets.py's AutogradTrainer (the MLP trained
imperatively: attach_grad, autograd.record(), -log_softmax at the label,
backward, sgd_update) on graph_nets.make_inputs('mlp'), the very code
compare_autograd_mlp.py times, and this stores what test_autograd.py
compares with ours:

- ``input_sums``: the float64 sum of every input array (sorted by name);
- ``outputs``: the softmax of batch 0 before training;
- ``grad.<param>``: every parameter's gradient after the first step;
- ``param.<param>``: every parameter after STEPS steps (the MLP is small).
"""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "autograd_reference.npz"
STEPS = 3


def input_sums(inputs):
    return np.array([inputs[k].astype(np.float64).sum() for k in sorted(inputs)])


def main():
    sys.path.insert(0, str(ROOT))
    import mxnet as mx

    from benchmarks import graph_nets
    inputs = graph_nets.make_inputs("mlp")
    trainer = graph_nets.AutogradTrainer(mx, graph_nets.AUTOGRAD_NET, inputs)
    out = {"input_sums": input_sums(inputs), "outputs": trainer.outputs(0)}
    for i in range(STEPS):
        trainer.step(i)
        if i == 0:
            out.update({f"grad.{k}": w.grad.asnumpy() for k, w in trainer.weights.items()})
    out.update({f"param.{k}": v for k, v in trainer.params().items()})
    np.savez_compressed(OUT, mxnet_version=mx.__version__, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) with MXNet {mx.__version__}")


if __name__ == "__main__":
    main()
