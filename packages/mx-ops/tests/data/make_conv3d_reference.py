"""Records MXNet 1.9.1's 3-D (NCDHW) Convolution, Deconvolution and Pooling
(outputs and input gradients under random output gradients) in
tests/data/conv3d_mxnet191.npz for tests/test_conv_pool_3d.py.
Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_conv3d_reference.py
MXNet's 3-D Deconvolution needs its oneDNN (MKLDNN) path, which refuses
dilation (so does its 3-D Convolution's backward) and fails with every
target_shape that implies padding ("could not create a descriptor for a
dilated deconvolution"): no case here dilates, and target_shape gives no
padding (tests/test_conv_pool_3d.py checks those against NumPy).
Each case stores '<case>/in<i>', '<case>/g', '<case>/out', '<case>/grad<i>';
'index' maps each case to its op, parameters and input count."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)

CASES = [  # (case, op, input shapes, parameters)
    ("conv_groups", "Convolution", [(2, 4, 5, 6, 7), (6, 2, 3, 2, 3), (6,)],
     dict(num_filter=6, kernel=(3, 2, 3), stride=(2, 1, 2), pad=(1, 1, 0),
          num_group=2)),
    ("conv_plain", "Convolution", [(3, 2, 4, 5, 4), (5, 2, 3, 3, 3)],
     dict(num_filter=5, kernel=(3, 3, 3), pad=(1, 1, 1), no_bias=True)),
    ("deconv_adj", "Deconvolution", [(2, 4, 3, 4, 3), (4, 2, 3, 3, 2), (4,)],
     dict(num_filter=4, kernel=(3, 3, 2), stride=(2, 1, 2), pad=(1, 0, 1), adj=(1, 0, 1),
          num_group=2, no_bias=False)),
    ("deconv_target", "Deconvolution", [(1, 3, 3, 3, 4), (3, 2, 3, 3, 3)],
     dict(num_filter=2, kernel=(3, 3, 3), target_shape=(5, 5, 6))),
    ("pool_max_full", "Pooling", [(2, 3, 5, 6, 7)],
     dict(kernel=(3, 3, 2), stride=(2, 2, 2), pad=(1, 1, 0), pool_type="max",
          pooling_convention="full")),
    ("pool_avg_nopad", "Pooling", [(2, 2, 5, 5, 6)],
     dict(kernel=(3, 2, 3), stride=(2, 2, 1), pad=(1, 1, 1), pool_type="avg",
          count_include_pad=False)),
    ("pool_avg_pad", "Pooling", [(1, 2, 4, 5, 5)],
     dict(kernel=(2, 3, 3), stride=(1, 2, 2), pad=(1, 1, 1), pool_type="avg")),
    ("pool_lp2", "Pooling", [(2, 2, 4, 5, 4)],
     dict(kernel=(2, 2, 2), stride=(2, 1, 2), pad=(0, 1, 1), pool_type="lp", p_value=2)),
    ("pool_lp3", "Pooling", [(1, 2, 5, 4, 4)],
     dict(kernel=(3, 2, 2), stride=(2, 2, 2), pool_type="lp", p_value=3)),
    ("pool_sum_global", "Pooling", [(2, 3, 3, 4, 5)],
     dict(kernel=(1, 1, 1), pool_type="sum", global_pool=True)),
]


def main():
    out, index = {}, {}
    for case, op, shapes, params in CASES:
        ins = [mx.nd.array(rng.randn(*s).astype(np.float32)) for s in shapes]
        for x in ins:
            x.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, op)(*ins, **params)
        g = mx.nd.array(rng.randn(*y.shape).astype(np.float32))
        y.backward(g)
        for i, x in enumerate(ins):
            out[f"{case}/in{i}"] = x.asnumpy()
            out[f"{case}/grad{i}"] = x.grad.asnumpy()
        out[f"{case}/g"] = g.asnumpy()
        out[f"{case}/out"] = y.asnumpy()
        index[case] = {"op": op, "nin": len(ins), "params": params}
    out["index"] = np.array(json.dumps(index))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv3d_mxnet191.npz")
    np.savez_compressed(path, **out)
    print("wrote", path)


if __name__ == "__main__":
    main()
