"""MXNet's Python-level math functions of issue 15: mx.sym.power / hypot /
maximum / minimum with MXNet's symbol-or-number dispatch, and
mx.nd.contrib.isinf / isnan / isfinite, against NumPy."""
import json

import numpy as np
import pytest

import mx


def _eval(sym, **feeds):
    return sym.eval(**{k: mx.nd.array(v) for k, v in feeds.items()})[0].asnumpy()


A = np.array([3.0, -4.0, 0.5, 2.0], np.float32)
B = np.array([4.0, 3.0, -2.0, 2.0], np.float32)


@pytest.mark.parametrize("name, ref", [("power", np.power), ("hypot", np.hypot),
                                       ("maximum", np.maximum), ("minimum", np.minimum)])
def test_symbol_functions_dispatch_like_mxnet(name, ref):
    fn, x, y = getattr(mx.sym, name), mx.sym.var("x"), mx.sym.var("y")
    a = np.abs(A) if name == "power" else A
    np.testing.assert_allclose(_eval(fn(x, y), x=a, y=B), ref(a, B), rtol=1e-6)
    np.testing.assert_allclose(_eval(fn(x, 2.0), x=a), ref(a, 2.0), rtol=1e-6)
    np.testing.assert_allclose(_eval(fn(2.0, x), x=a), ref(2.0, a), rtol=1e-6)
    assert fn(3, 4) == ref(3, 4)
    with pytest.raises(TypeError):
        fn("a", x)


def test_symbol_op_names_are_mxnets():
    """The operator names MXNet 1.9.1's JSON holds for these calls."""
    x, y = mx.sym.var("x"), mx.sym.var("y")
    for sym, op in ((mx.sym.hypot(x, y), "_hypot"), (mx.sym.hypot(x, 1.0), "_hypot_scalar"),
                    (mx.sym.power(x, y), "_power"), (mx.sym.power(2.0, x), "_rpower_scalar"),
                    (mx.sym.maximum(x, y), "_maximum")):
        assert [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"] == [op]


def test_contrib_isinf_isnan_isfinite():
    v = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -2.5], np.float32)
    a = mx.nd.array(v)
    for name, ref in (("isinf", np.isinf), ("isnan", np.isnan), ("isfinite", np.isfinite)):
        got = getattr(mx.nd.contrib, name)(a)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.asnumpy(), ref(v).astype(np.float32))
        assert name in dir(mx.nd.contrib)
