"""Records MXNet 1.9.1's GridGenerator, BilinearSampler, SpatialTransformer and Correlation
(outputs and input gradients under random output gradients) in
tests/data/spatial_mxnet191.npz for tests/test_spatial.py.
Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_spatial_reference.py
The sampler's grids reach past [-1, 1] so that taps outside the data (read
as zeros) are covered.  Each case stores '<case>/in<i>', '<case>/g',
'<case>/out', '<case>/grad<i>'; 'index' maps each case to its op,
parameters and input count."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)

CASES = [  # (case, op, inputs, parameters, dtype)
    ("affine", "GridGenerator", [rng.randn(3, 6)],
     dict(transform_type="affine", target_shape=(4, 5)), "float32"),
    ("affine_wide", "GridGenerator", [rng.randn(2, 6)],
     dict(transform_type="affine", target_shape=(2, 7)), "float32"),
    ("warp", "GridGenerator", [rng.randn(2, 2, 3, 4) * 2],
     dict(transform_type="warp"), "float32"),
    ("sampler", "BilinearSampler",
     [rng.randn(2, 3, 5, 6), rng.uniform(-1.3, 1.3, (2, 2, 4, 7))], dict(), "float32"),
    ("sampler_f64", "BilinearSampler",
     [rng.randn(1, 2, 4, 4), rng.uniform(-1.1, 1.1, (1, 2, 3, 3))], dict(), "float64"),
    ("sampler_up", "BilinearSampler", [rng.randn(1, 1, 2, 3), rng.uniform(-1.0, 1.0, (1, 2, 5, 5))],
     dict(cudnn_off=True), "float32"),
    ("transformer", "SpatialTransformer",
     [rng.randn(2, 3, 5, 6),
      np.array([[0.9, 0.2, 0.1, -0.3, 1.1, 0.05], [1.2, -0.4, 0.3, 0.5, 0.8, -0.2]])],
     dict(target_shape=(4, 7), transform_type="affine", sampler_type="bilinear"), "float32"),
    ("transformer_f64", "SpatialTransformer",
     [rng.randn(1, 2, 4, 5), rng.randn(1, 6) * 0.8],
     dict(target_shape=(3, 3), transform_type="affine", sampler_type="bilinear"), "float64"),
    ("corr_mul", "Correlation", [rng.randn(2, 3, 7, 8), rng.randn(2, 3, 7, 8)],
     dict(kernel_size=3, max_displacement=2, stride1=2, stride2=1, pad_size=2), "float32"),
    ("corr_abs", "Correlation", [rng.randn(1, 2, 6, 7), rng.randn(1, 2, 6, 7)],
     dict(kernel_size=1, max_displacement=2, stride2=2, pad_size=1, is_multiply=False),
     "float32"),
    ("corr_f64", "Correlation", [rng.randn(2, 2, 6, 6), rng.randn(2, 2, 6, 6)],
     dict(kernel_size=3, max_displacement=1, pad_size=1), "float64"),
]


def main():
    out, index = {}, {}
    for case, op, arrays, params, dtype in CASES:
        ins = [mx.nd.array(a, dtype=dtype) for a in arrays]
        for x in ins:
            x.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, op)(*ins, **params)
        g = mx.nd.array(rng.randn(*y.shape), dtype=dtype)
        y.backward(g)
        for i, x in enumerate(ins):
            out[f"{case}/in{i}"] = x.asnumpy()
            out[f"{case}/grad{i}"] = x.grad.asnumpy()
        out[f"{case}/g"] = g.asnumpy()
        out[f"{case}/out"] = y.asnumpy()
        index[case] = {"op": op, "params": {k: list(v) if isinstance(v, tuple) else v
                                            for k, v in params.items()}, "inputs": len(ins)}
    out["index"] = np.array(json.dumps(index))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spatial_mxnet191.npz")
    np.savez_compressed(path, **out)


if __name__ == "__main__":
    main()
