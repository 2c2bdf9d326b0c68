"""Records MXNet 1.9.1's interleaved attention matmuls (outputs and input
gradients under random head gradients) in tests/data/attention_mxnet191.npz
for tests/test_attention.py.  MXNet's CPU kernels compute float32 only.
Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_attention_reference.py
Each case stores '<case>/in<i>', '<case>/g', '<case>/out', '<case>/grad<i>'."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)
S, SQ, B, H, D = 5, 4, 2, 3, 4

CASES = [  # (case, contrib op, input shapes)
    ("selfatt_qk", "interleaved_matmul_selfatt_qk", [(S, B, H * 3 * D)]),
    ("selfatt_valatt", "interleaved_matmul_selfatt_valatt", [(S, B, H * 3 * D), (B * H, S, S)]),
    ("encdec_qk", "interleaved_matmul_encdec_qk", [(SQ, B, H * D), (S, B, H * 2 * D)]),
    ("encdec_valatt", "interleaved_matmul_encdec_valatt", [(S, B, H * 2 * D), (B * H, SQ, S)]),
]


def main():
    out, index = {}, {}
    for case, op, shapes in CASES:
        ins = [mx.nd.array(rng.randn(*s).astype(np.float32)) for s in shapes]
        for x in ins:
            x.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd.contrib, op)(*ins, heads=H)
        g = mx.nd.array(rng.randn(*y.shape).astype(np.float32))
        y.backward(g)
        for i, x in enumerate(ins):
            out[f"{case}/in{i}"] = x.asnumpy()
            out[f"{case}/grad{i}"] = x.grad.asnumpy()
        out[f"{case}/g"] = g.asnumpy()
        out[f"{case}/out"] = y.asnumpy()
        index[case] = {"op": op, "nin": len(ins), "heads": H}
    out["index"] = np.array(json.dumps(index))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_mxnet191.npz")
    np.savez_compressed(path, **out)
    print("wrote", path)


if __name__ == "__main__":
    main()
