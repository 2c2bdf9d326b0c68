"""Writes graph_training_reference.npz here with real MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_graph_training_reference.py

For each of benchmarks/graph_nets.py's nets (the example MLP and LeNet),
MXNet runs the very code our executor runs in the benchmarks (simple_bind,
the example's loop) on graph_nets.make_inputs' weights and batches, and
this stores what test_graph_training_reference.py compares with ours:

- ``<net>.input_sums``: the float64 sum of every input array (sorted by
  name), so that a change to make_inputs fails the test with a clear
  message instead of a mismatch;
- ``<net>.outputs``: the SoftmaxOutput probabilities of batch 0 (inference);
- ``<net>.index.<param>`` and ``<net>.delta.<param>``: 128 seeded flat
  positions of each parameter and its change there after STEPS training
  iterations (a sample: LeNet's full parameters would be 1.7 MB);
- ``<net>.scale.<param>``: the largest change over the whole parameter.
"""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "graph_training_reference.npz"
STEPS = 3
SAMPLES = 128


def input_sums(inputs):
    return np.array([inputs[k].astype(np.float64).sum() for k in sorted(inputs)])


def sample_index(net, name, size):
    """The flat positions sampled in a parameter of ``size`` elements."""
    rng = np.random.default_rng([ord(c) for c in f"{net}.{name}"])
    return np.sort(rng.choice(size, min(SAMPLES, size), replace=False))


def main():
    sys.path.insert(0, str(ROOT))
    import mxnet as mx

    from benchmarks import graph_nets
    out = {}
    for net in graph_nets.NETS:
        inputs = graph_nets.make_inputs(net)
        trainer = graph_nets.SymbolicTrainer(mx, net, inputs)
        out[f"{net}.input_sums"] = input_sums(inputs)
        out[f"{net}.outputs"] = trainer.outputs(0)
        for i in range(STEPS):
            trainer.step(i)
        for name, value in trainer.params().items():
            delta = (value - inputs[name]).ravel()
            index = sample_index(net, name, delta.size)
            out[f"{net}.index.{name}"] = index.astype(np.int64)
            out[f"{net}.delta.{name}"] = delta[index]
            out[f"{net}.scale.{name}"] = np.float32(np.abs(delta).max())
    np.savez_compressed(OUT, mxnet_version=mx.__version__, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) with MXNet {mx.__version__}")


if __name__ == "__main__":
    main()
