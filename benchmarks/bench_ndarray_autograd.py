"""Autograd, ours only: one imperative training step of the MLP
(benchmarks/graph_nets.py's AutogradTrainer: record, backward through the
cached backward program, sgd_update, a wait), and one small call recorded
against the same call unrecorded.  Side-by-side ratios against MXNet 1.9.1
and PyTorch eager come from ``benchmarks/compare_autograd_mlp.py``."""
import numpy as np

import mx

from . import graph_nets


class AutogradTrainingStep:

    def setup(self):
        self.trainer = graph_nets.AutogradTrainer(mx, graph_nets.AUTOGRAD_NET,
                                                  graph_nets.make_inputs("mlp"))
        self.trainer.step(0)            # the first step builds the backward program
        self.i = 1

    def time_step(self):
        self.trainer.step(self.i)
        self.i += 1


class RecordedCall:
    """100 relu calls on 100 floats, unrecorded or recorded."""
    params = [[False, True]]
    param_names = ["recorded"]

    def setup(self, recorded):
        self.x = mx.nd.array(np.random.default_rng(0).standard_normal(100).astype(np.float32))
        if recorded:
            self.x.attach_grad()
        self.recorded = recorded

    def time_relu(self, recorded):
        x, relu = self.x, mx.nd.relu
        with mx.autograd.record() if recorded else mx.autograd.pause():
            for _ in range(100):
                y = relu(x)
        y.wait_to_read()
