"""Writes the MXNet 1.9.1 sparse reference data of tests/test_sparse*.py:
sparse .params files (csr and row_sparse of several dtypes, mixed with a
dense array, as a dict and as a list) and mxnet_sparse_ops.npz (the results
of cast_storage, elemwise_add/sub, unary ops, _square_sum and retain on
fixed inputs, with their storage types).

Run with MXNet 1.9.1: MX_MXNET_PYTHON (default /tmp/mxnet-venv/bin/python)
    $MX_MXNET_PYTHON packages/mx-ndarray/tests/data/sparse/make_mxnet_sparse.py
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def dense_inputs():
    rng = np.random.RandomState(16)
    a = rng.randn(6, 5).astype("float32")
    a[rng.rand(6, 5) < 0.6] = 0
    a[2] = 0
    b = rng.randn(6, 5).astype("float32")
    b[rng.rand(6, 5) < 0.6] = 0
    b[4] = 0
    return a, b


def main():
    a, b = dense_inputs()
    csr = mx.nd.array(a).tostype("csr")
    rsp = mx.nd.array(b).tostype("row_sparse")
    rsp3 = mx.nd.array(np.stack([b, -b], axis=2)).tostype("row_sparse")
    csr64 = mx.nd.array(a, dtype="float64").tostype("csr")
    rsp_i = mx.nd.array((b * 10).round(), dtype="int32").tostype("row_sparse")
    zcsr = mx.nd.sparse.zeros("csr", (3, 4))
    zrsp = mx.nd.sparse.zeros("row_sparse", (3, 4))
    dense = mx.nd.array(a)
    mx.nd.save(os.path.join(HERE, "mxnet_sparse_dict.params"),
               {"csr": csr, "rsp": rsp, "rsp3": rsp3, "csr64": csr64, "rsp_i": rsp_i,
                "zcsr": zcsr, "zrsp": zrsp, "dense": dense})
    mx.nd.save(os.path.join(HERE, "mxnet_sparse_list.params"), [rsp, csr, dense])

    out = {"a": a, "b": b}
    stypes = {}

    def keep(name, x):
        out[name] = x.asnumpy()
        stypes[name] = x.stype

    ca, cb = mx.nd.array(a).tostype("csr"), mx.nd.array(b).tostype("csr")
    ra, rb = mx.nd.array(a).tostype("row_sparse"), mx.nd.array(b).tostype("row_sparse")
    keep("csr_add", mx.nd.elemwise_add(ca, cb))
    keep("csr_sub", mx.nd.elemwise_sub(ca, cb))
    keep("rsp_add", mx.nd.elemwise_add(ra, rb))
    keep("rsp_sub", mx.nd.elemwise_sub(ra, rb))
    keep("rsp_dns_add", mx.nd.elemwise_add(ra, mx.nd.array(b)))
    keep("csr_mul", mx.nd.elemwise_mul(ca, cb))
    keep("rsp_mul", mx.nd.elemwise_mul(ra, rb))
    keep("rsp_dns_mul", mx.nd.elemwise_mul(ra, mx.nd.array(b)))
    keep("dns_csr_mul", mx.nd.elemwise_mul(mx.nd.array(a), cb))
    keep("rsp_csr_mul", mx.nd.elemwise_mul(ra, cb))
    for name in ("abs", "sign", "sqrt", "square", "relu", "exp"):
        keep(f"{name}_rsp", getattr(mx.nd, name)(mx.nd.abs(ra) if name == "sqrt" else ra))
        keep(f"{name}_csr", getattr(mx.nd, name)(mx.nd.abs(ca) if name == "sqrt" else ca))
    keep("mul_scalar_csr", ca * 3)
    keep("square_sum_0", mx.nd._internal._square_sum(ra, axis=0))
    keep("square_sum_1", mx.nd._internal._square_sum(ra, axis=1))
    keep("square_sum_1k", mx.nd._internal._square_sum(ra, axis=1, keepdims=True))
    r = mx.nd.sparse.retain(rb, mx.nd.array([0, 2, 4, 5], dtype="int64"))
    keep("retain", r)
    out["retain_indices"] = r.indices.asnumpy()
    keep("csr_slice", ca[1:4])
    out["csr_slice_indptr"] = ca[1:4].indptr.asnumpy()
    np.savez(os.path.join(HERE, "mxnet_sparse_ops.npz"), **out)
    with open(os.path.join(HERE, "mxnet_sparse_stypes.json"), "w") as f:
        json.dump(stypes, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
