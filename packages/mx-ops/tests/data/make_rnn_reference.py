"""Records MXNet 1.9.1's fused RNN outputs and gradients (tests/data/rnn_mxnet191.npz)
for tests/test_rnn.py: the parameter vector's layout, the gate order and
formulas (GRU's reset gate), layers, directions, state outputs and projection.
Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_rnn_reference.py
Each case stores its parameters as JSON ('<case>/params'), its inputs
('<case>/in<i>': data, parameters, state[, state_cell]), head gradients
('<case>/g<i>'), outputs ('<case>/out<i>') and input gradients
('<case>/grad<i>', not with projection: MXNet 1.9.1 has no CPU backward
for it), float64.  It also writes rnn_lstm_mxnet191.params:
mx.nd.save of the 'lstm_l2_bi' case's parameter vector, as a fused RNN
layer's .params holds it."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)
GATES = {"lstm": 4, "gru": 3, "rnn_relu": 1, "rnn_tanh": 1}

CASES = [  # (case, T, N, I, params)
    ("lstm", 5, 3, 4, dict(state_size=6, num_layers=1, mode="lstm", state_outputs=True)),
    ("gru", 5, 3, 4, dict(state_size=6, num_layers=1, mode="gru", state_outputs=True)),
    ("rnn_relu", 4, 2, 3, dict(state_size=5, num_layers=1, mode="rnn_relu", state_outputs=True)),
    ("rnn_tanh", 4, 2, 3, dict(state_size=5, num_layers=1, mode="rnn_tanh", state_outputs=True)),
    ("lstm_l2_bi", 4, 3, 5, dict(state_size=4, num_layers=2, mode="lstm", bidirectional=True,
                                 state_outputs=True)),
    ("gru_l3_bi", 3, 2, 3, dict(state_size=4, num_layers=3, mode="gru", bidirectional=True,
                                state_outputs=True)),
    ("tanh_l2", 3, 2, 4, dict(state_size=3, num_layers=2, mode="rnn_tanh", state_outputs=False)),
    ("lstm_proj", 4, 2, 3, dict(state_size=5, num_layers=2, mode="lstm", projection_size=3,
                                bidirectional=True, state_outputs=True)),
]


def param_size(I, p):
    H, L = p["state_size"], p["num_layers"]
    D = 2 if p.get("bidirectional") else 1
    P = p.get("projection_size") or H
    G = GATES[p["mode"]] * H
    size = G * (I + P + 2) * D + (L - 1) * G * (D * P + P + 2) * D
    return size + (P * H * L * D if p.get("projection_size") else 0)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = {}
    for case, T, N, I, p in CASES:
        H, L = p["state_size"], p["num_layers"]
        D = 2 if p.get("bidirectional") else 1
        P = p.get("projection_size") or H
        ins = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-0.5, 0.5, (param_size(I, p),)),
               rng.uniform(-1, 1, (L * D, N, P))]
        if p["mode"] == "lstm":
            ins.append(rng.uniform(-1, 1, (L * D, N, H)))
        arrs = [mx.nd.array(a, dtype="float64") for a in ins]
        for a in arrs:
            a.attach_grad()
        # MXNet 1.9.1 has no CPU backward with projection: its outputs only.
        train = not p.get("projection_size")
        if train:
            with mx.autograd.record():
                outs = mx.nd.RNN(*arrs, **p)
        else:
            outs = mx.nd.RNN(*arrs, **p)
        outs = outs if isinstance(outs, list) else [outs]
        heads = [rng.uniform(-1, 1, o.shape) for o in outs]
        if train:
            mx.autograd.backward(outs, [mx.nd.array(g, dtype="float64") for g in heads])
        out[f"{case}/params"] = np.array(json.dumps(p))
        for i, a in enumerate(ins):
            out[f"{case}/in{i}"] = a
            if train:
                out[f"{case}/grad{i}"] = arrs[i].grad.asnumpy()
        for i, (o, g) in enumerate(zip(outs, heads)):
            out[f"{case}/out{i}"] = o.asnumpy()
            out[f"{case}/g{i}"] = g
        if case == "lstm_l2_bi":
            mx.nd.save(os.path.join(here, "rnn_lstm_mxnet191.params"),
                       {"rnn0_parameters": mx.nd.array(ins[1], dtype="float32")})
    np.savez_compressed(os.path.join(here, "rnn_mxnet191.npz"), **out)


if __name__ == "__main__":
    main()
