"""The benchmarks' training workloads (benchmarks/graph_nets.py: the example
MLP and LeNet, simple_bind, forward, backward, the example's SGD loop) on our
executor against what MXNet 1.9.1 computed for the same weights and batches
(tests/data/graph_training_reference.npz, see its README): the same outputs,
and the same parameter updates after a few iterations, so that the
side-by-side timings in compare_graph.py compare the same computation."""
import sys
from pathlib import Path

import numpy as np
import pytest

import mx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "data"))
from benchmarks import graph_nets  # noqa: E402
from make_graph_training_reference import STEPS, input_sums  # noqa: E402

REFERENCE = ROOT / "tests" / "data" / "graph_training_reference.npz"
# float32 in a different summation order than MXNet's oneDNN and OpenBLAS,
# and updates rounded to the weights' ulp: ~1e-5 of an update's size seen.
RTOL = 2e-4


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE) as f:
        return dict(f)


@pytest.mark.parametrize("net", list(graph_nets.NETS))
def test_training_matches_mxnet(net, reference):
    inputs = graph_nets.make_inputs(net)
    np.testing.assert_allclose(
        input_sums(inputs), reference[f"{net}.input_sums"], rtol=1e-12,
        err_msg="graph_nets.make_inputs changed: regenerate the reference "
                "(tests/data/README.md)")
    trainer = graph_nets.SymbolicTrainer(mx, net, inputs)
    np.testing.assert_allclose(trainer.outputs(0), reference[f"{net}.outputs"],
                               rtol=0, atol=1e-6, err_msg=f"{net}: outputs")
    for i in range(STEPS):
        trainer.step(i)
    for name, value in trainer.params().items():
        index = reference[f"{net}.index.{name}"]
        delta = (value - inputs[name]).ravel()[index]
        scale = float(reference[f"{net}.scale.{name}"])
        np.testing.assert_allclose(delta, reference[f"{net}.delta.{name}"], rtol=0,
                                   atol=RTOL * scale,
                                   err_msg=f"{net}: the update of {name} after {STEPS} "
                                           f"iterations")
