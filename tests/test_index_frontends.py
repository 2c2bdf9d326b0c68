"""MXNet's Python-level functions over the index operators of issue 15:
mx.nd.eye / linspace / histogram, NDArray.diag, mx.sym.eye / linspace /
histogram (their JSON as MXNet 1.9.1 writes it) and mx.nd.contrib.boolean_mask
(against MXNet 1.9.1's outputs and gradients, recorded in
packages/mx-ops/tests/data/index_ops_mxnet191.npz)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import mx

DATA = Path(__file__).resolve().parent.parent / "packages" / "mx-ops" / "tests" / "data"
sys.path.insert(0, str(DATA))
from index_ops_cases import CASES  # noqa: E402

sys.path.remove(str(DATA))
REFERENCE = np.load(DATA / "index_ops_mxnet191.npz")
MASK_CASES = [c for c in CASES if c[1] == "_contrib_boolean_mask"]


def test_nd_creation_functions():
    e = mx.nd.eye(3, 4, 1, dtype="int32")
    assert e.dtype == np.int32 and e.context == mx.cpu()
    np.testing.assert_array_equal(e.asnumpy(), np.eye(3, 4, 1, dtype="int32"))
    assert mx.nd.eye(2).dtype == np.float32
    np.testing.assert_array_equal(mx.nd.linspace(2.0, 3.0, 5).asnumpy(),
                                  np.linspace(2, 3, 5, dtype="float32"))
    np.testing.assert_array_equal(mx.nd.linspace(2.0, 3.0, 5, endpoint=False).asnumpy(),
                                  np.linspace(2, 3, 5, endpoint=False).astype("float32"))


def test_nd_histogram():
    a = mx.nd.array([0, 1, 1, 2, 3, 3.5, 4, 5])
    counts, edges = mx.nd.histogram(a, bins=4, range=(0, 4))
    np.testing.assert_array_equal(counts.asnumpy(), [1, 2, 1, 3])
    assert counts.dtype == np.int64
    counts, edges = mx.nd.histogram(a, bins=mx.nd.array([0, 1, 3, 4]))
    np.testing.assert_array_equal(counts.asnumpy(), [1, 3, 3])
    np.testing.assert_array_equal(edges.asnumpy(), [0, 1, 3, 4])
    with pytest.warns(UserWarning, match="range is not specified"):
        counts, edges = mx.nd.histogram(a, bins=3)
    want = np.histogram(a.asnumpy(), bins=3)
    np.testing.assert_array_equal(counts.asnumpy(), want[0])
    with pytest.raises(ValueError, match="bins argument should be"):
        mx.nd.histogram(a, bins=2.5)


def test_ndarray_diag_method_and_autograd():
    x = mx.nd.array(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(x.diag(1).asnumpy(), [1, 5])
    np.testing.assert_array_equal(x.diag(k=-1).asnumpy(), [3])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.diag(x, k=1)
    y.backward(mx.nd.array([10, 20]))
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 10, 0], [0, 0, 20]])


def _ops(sym):
    return [(n["op"], n.get("attrs", {})) for n in json.loads(sym.tojson())["nodes"]
            if n["op"] != "null"]


def test_symbol_functions_write_mxnets_json():
    # The attributes MXNet 1.9.1's mx.sym.eye / linspace / histogram store.
    assert _ops(mx.sym.eye(3)) == [("_eye", {"M": "0", "N": "3", "dtype": "float32",
                                             "k": "0"})]
    assert _ops(mx.sym.linspace(0, 1, 5)) == [("_linspace", {
        "dtype": "float32", "endpoint": "True", "num": "5", "start": "0", "stop": "1"})]
    a = mx.sym.var("a")
    assert _ops(mx.sym.histogram(a, bins=3, range=(0, 1))) == [
        ("_histogram", {"bin_cnt": "3", "range": "(0, 1)"})]
    h = mx.sym.histogram(a, bins=mx.sym.var("b"))
    assert h.list_arguments() == ["a", "b"] and len(h.list_outputs()) == 2
    with pytest.raises(ValueError, match="null range is not supported in symbol mode"):
        mx.sym.histogram(a, bins=3)


def test_symbol_functions_evaluate():
    np.testing.assert_array_equal(mx.sym.eye(2, 3, -1).eval()[0].asnumpy(), np.eye(2, 3, -1))
    np.testing.assert_array_equal(mx.sym.linspace(-1, 1, 5, dtype="float64").eval()[0].asnumpy(),
                                  np.linspace(-1, 1, 5))
    counts, edges = mx.sym.histogram(mx.sym.var("a"), bins=2, range=(0, 2)).eval(
        a=mx.nd.array([0, 0.5, 1, 2, 3]))
    np.testing.assert_array_equal(counts.asnumpy(), [2, 2])


@pytest.mark.parametrize("name, op, inputs, params, ograd", MASK_CASES,
                         ids=[c[0] for c in MASK_CASES])
def test_boolean_mask_matches_mxnet(name, op, inputs, params, ograd):
    data, index = (mx.nd.array(x, dtype=x.dtype) for x in inputs)
    if ograd is None:
        out = mx.nd.contrib.boolean_mask(data, index)
    else:
        data.attach_grad()
        with mx.autograd.record():
            out = mx.nd.contrib.boolean_mask(data, index)
        out.backward(mx.nd.array(ograd, dtype=ograd.dtype))
        np.testing.assert_array_equal(data.grad.asnumpy(), REFERENCE[f"{name}.grad0"])
    want = REFERENCE[f"{name}.out0"]
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_boolean_mask_errors():
    data = mx.nd.ones((3, 2))
    with pytest.raises(mx.base.MXNetError, match="only 0 is supported"):
        mx.nd.contrib.boolean_mask(data, mx.nd.ones(2), axis=1)
    with pytest.raises(mx.base.MXNetError, match="'index' has shape \\(2,\\)"):
        mx.nd.contrib.boolean_mask(data, mx.nd.ones(2))
    assert "boolean_mask" in dir(mx.nd.contrib)
