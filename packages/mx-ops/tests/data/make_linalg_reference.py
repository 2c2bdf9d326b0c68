"""Records MXNet 1.9.1's linalg outputs and gradients (tests/data/linalg_mxnet191.npz)
for tests/test_linalg.py: the conventions that NumPy does not fix (gelqf's
signs, syevd's eigenvector signs, the gradients of potrf/potri/trmm/trsm/
syrk/gelqf/syevd/det/slogdet/...).  Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_linalg_reference.py
Each case stores its inputs ('<case>/in<i>'), head gradients ('<case>/g<i>'),
outputs ('<case>/out<i>') and input gradients ('<case>/grad<i>'), float64."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)


def spd(*shape):
    a = rng.randn(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def lower(*shape):
    a = np.tril(rng.randn(*shape))
    return a + 3 * np.eye(shape[-1]) * np.sign(np.diagonal(a, 0, -2, -1))[..., None]


def sym(*shape):
    a = rng.randn(*shape)
    return a + np.swapaxes(a, -1, -2)


CASES = [  # (case, op, inputs, params)
    ("gemm", "gemm", [rng.randn(2, 3, 4), rng.randn(2, 4, 5), rng.randn(2, 3, 5)],
     dict(alpha=1.5, beta=-0.5)),
    ("gemm_t", "gemm", [rng.randn(4, 3), rng.randn(5, 4), rng.randn(3, 5)],
     dict(transpose_a=True, transpose_b=True, alpha=0.7, beta=2.0)),
    ("gemm_axis", "gemm", [rng.randn(3, 2, 4), rng.randn(4, 2, 5), rng.randn(3, 2, 5)],
     dict(axis=0, alpha=1.0, beta=1.0)),
    ("gemm2", "gemm2", [rng.randn(2, 3, 4), rng.randn(2, 5, 4)], dict(transpose_b=True, alpha=2.0)),
    ("gemm2_axis", "gemm2", [rng.randn(2, 4, 3, 2), rng.randn(2, 4, 3, 5)],
     dict(axis=1, transpose_a=True)),
    ("potrf", "potrf", [spd(2, 4, 4)], {}),
    ("potrf_upper", "potrf", [spd(4, 4)], dict(lower=False)),
    ("potri", "potri", [lower(2, 3, 3)], {}),
    ("potri_upper", "potri", [np.swapaxes(lower(3, 3), -1, -2)], dict(lower=False)),
    ("trmm", "trmm", [lower(2, 3, 3), rng.randn(2, 3, 4)], dict(alpha=1.5)),
    ("trmm_tr", "trmm", [lower(3, 3), rng.randn(4, 3)],
     dict(transpose=True, rightside=True, alpha=0.5)),
    ("trmm_upper", "trmm", [np.swapaxes(lower(3, 3), -1, -2), rng.randn(3, 2)], dict(lower=False)),
    ("trsm", "trsm", [lower(2, 3, 3), rng.randn(2, 3, 4)], dict(alpha=1.5)),
    ("trsm_tr", "trsm", [lower(3, 3), rng.randn(4, 3)],
     dict(transpose=True, rightside=True, alpha=-0.5)),
    ("trsm_upper", "trsm", [np.swapaxes(lower(3, 3), -1, -2), rng.randn(3, 2)],
     dict(lower=False, transpose=True)),
    ("syrk", "syrk", [rng.randn(2, 3, 4)], dict(alpha=1.5)),
    ("syrk_t", "syrk", [rng.randn(3, 4)], dict(transpose=True)),
    ("gelqf", "gelqf", [rng.randn(2, 3, 5)], {}),
    ("gelqf_sq", "gelqf", [rng.randn(4, 4)], {}),
    ("syevd", "syevd", [sym(2, 4, 4)], {}),
    ("inverse", "inverse", [rng.randn(2, 3, 3) + 3 * np.eye(3)], {}),
    ("det", "det", [rng.randn(3, 3, 3)], {}),
    ("slogdet", "slogdet", [rng.randn(3, 3, 3)], {}),
    ("sumlogdiag", "sumlogdiag", [spd(2, 3, 3)], {}),
    ("extractdiag", "extractdiag", [rng.randn(2, 4, 4)], {}),
    ("extractdiag_off", "extractdiag", [rng.randn(4, 4)], dict(offset=-1)),
    ("makediag", "makediag", [rng.randn(2, 3)], dict(offset=1)),
    ("extracttrian", "extracttrian", [rng.randn(2, 4, 4)], {}),
    ("extracttrian_up", "extracttrian", [rng.randn(4, 4)], dict(lower=False)),
    ("extracttrian_off", "extracttrian", [rng.randn(4, 4)], dict(offset=-2)),
    ("maketrian", "maketrian", [rng.randn(2, 6)], {}),
    ("maketrian_up", "maketrian", [rng.randn(6)], dict(lower=False)),
    ("maketrian_off", "maketrian", [rng.randn(3)], dict(offset=2)),
    ("maketrian_neg", "maketrian", [rng.randn(3)], dict(offset=-1)),
]


def main():
    data, index = {}, {}
    for case, op, ins, params in CASES:
        nds = [mx.nd.array(x, dtype="float64") for x in ins]
        for x in nds:
            x.attach_grad()
        with mx.autograd.record():
            outs = getattr(mx.nd.linalg, op)(*nds, **params)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        gs = [rng.randn(*o.shape) for o in outs]
        if op == "slogdet":
            gs[0][...] = 0          # MXNet backwards no gradient through sign
        mx.autograd.backward(outs, [mx.nd.array(g, dtype="float64") for g in gs])
        for i, x in enumerate(ins):
            data[f"{case}/in{i}"] = x
            data[f"{case}/grad{i}"] = nds[i].grad.asnumpy()
        for i, (o, g) in enumerate(zip(outs, gs)):
            data[f"{case}/out{i}"] = o.asnumpy()
            data[f"{case}/g{i}"] = g
        index[case] = {"op": op, "params": params, "nin": len(ins), "nout": len(outs)}
    here = os.path.dirname(os.path.abspath(__file__))
    data["index"] = np.array(json.dumps(index))
    np.savez_compressed(os.path.join(here, "linalg_mxnet191.npz"), **data)


if __name__ == "__main__":
    main()
