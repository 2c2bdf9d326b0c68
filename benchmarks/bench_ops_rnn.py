"""The fused RNN through mx_ops.invoke (no engine): LSTM, 2 layers, hidden
256, sequence 35, batch 32, input 256, float32; forward, and the backward
from the forward's reserve (benchmarks/compare_rnn.py puts MXNet 1.9.1 and
PyTorch beside them)."""
import numpy as np

from mx_ops import invoke, registry
from mx_ops.ops.rnn import rnn

T, N, I, H, L = 35, 32, 256, 256, 2


class LSTM:
    def setup(self):
        rng = np.random.default_rng(0)
        self.params = dict(state_size=H, num_layers=L, mode="lstm", state_outputs=True)
        n = rnn.param_size(registry.get("RNN").parse_params(self.params), I)
        self.ins = [rng.uniform(-1, 1, (T, N, I)).astype(np.float32),
                    rng.uniform(-0.06, 0.06, n).astype(np.float32),
                    np.zeros((L, N, H), np.float32), np.zeros((L, N, H), np.float32)]
        self.outs = invoke("RNN", self.ins, **self.params)
        self.heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in self.outs[:3]]

    def time_forward(self):
        invoke("RNN", self.ins, **self.params)

    def time_backward(self):
        invoke("_backward_RNN", self.heads + self.ins + [self.outs[-1]], **self.params)
