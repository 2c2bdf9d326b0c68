"""The sparse operators' CuPy twin (_sparse_ops_gpu.py) against the CPU:
every case of data/sparse/sparse_ops_cases.py (storage type, shape, value;
csr op csr falls back on a GPU and casts back), then the kernels on
larger inputs for each dtype.  Needs CuPy and a CUDA device."""
import sys
import pathlib

import numpy as np
import pytest

from mx_engine import MXNetError, cpu, gpu
import mx_ndarray as nd

DATA = pathlib.Path(__file__).parent / "data" / "sparse"
sys.path.insert(0, str(DATA))
from sparse_ops_cases import arrays, cases  # noqa: E402

pytestmark = pytest.mark.gpu
SRC = arrays()


def _on(ctx, x, stype, dtype=None):
    a = nd.array(x, ctx=ctx, dtype=dtype or x.dtype)
    return a if stype == "default" else a.tostype(stype)


def _call(op, args, **params):
    fn = getattr(nd, op, None)
    return fn(*args, **params) if fn is not None else nd.invoke(op, list(args), **params)


def _run(ctx, op, inputs, params, src=SRC, dtype=None):
    try:
        out = _call(op, [_on(ctx, src[a], s, dtype) for a, s in inputs], **params)
        return out.stype, out.shape, out.asnumpy()
    except (MXNetError, ValueError) as e:
        return "error", type(e).__name__, None


@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_case_matches_the_cpu(case):
    _, op, inputs, params = case
    want = _run(cpu(0), op, inputs, params)
    got = _run(gpu(0), op, inputs, params)
    assert got[:2] == want[:2]
    if want[2] is not None:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                   "int8"])
def test_kernels_on_larger_inputs(dtype):
    rng = np.random.default_rng(3)
    big = {}
    for name in ("a", "b"):
        x = rng.integers(1, 5, size=(700, 90)).astype(dtype)
        x[rng.random(x.shape) < 0.9] = 0
        x[5:40] = 0
        big[name] = x
    big["row"] = rng.integers(1, 5, size=(1, 90)).astype(dtype)
    big["col"] = rng.integers(1, 5, size=(700, 1)).astype(dtype)
    for op, inputs, params in [
            ("elemwise_mul", [("a", "csr"), ("b", "default")], {}),
            ("elemwise_mul", [("a", "row_sparse"), ("b", "row_sparse")], {}),
            ("elemwise_add", [("a", "csr"), ("b", "default")], {}),
            ("elemwise_sub", [("a", "default"), ("b", "row_sparse")], {}),
            ("broadcast_mul", [("a", "csr"), ("row", "default")], {}),
            ("broadcast_div", [("a", "csr"), ("col", "default")], {}),
            ("broadcast_sub", [("a", "csr"), ("row", "default")], {}),
            ("add_n", [("a", "row_sparse"), ("b", "row_sparse"), ("a", "row_sparse")], {}),
            ("slice", [("a", "csr")], {"begin": (3, 7), "end": (650, 80)}),
            ("where", [("a", "csr"), ("b", "default"), ("a", "default")], {}),
            ("sum", [("a", "csr")], {"axis": 0}),
            ("mean", [("a", "csr")], {"axis": 1}),
            ("norm", [("a", "csr")], {"axis": 1})]:
        want = _run(cpu(0), op, inputs, params, big)
        got = _run(gpu(0), op, inputs, params, big)
        assert got[:2] == want[:2], op
        np.testing.assert_allclose(got[2].astype("float64"), want[2].astype("float64"),
                                   rtol=1e-3 if dtype == "float16" else 1e-6, err_msg=op)
