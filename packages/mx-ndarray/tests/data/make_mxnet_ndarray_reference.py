"""Writes mxnet_ndarray_reference.json: what MXNet 1.9.1's NDArray gives
where NumPy's semantics differ or do not apply (an element selected by ints
has shape (1,), fluent methods' output shapes and dtypes, repr, error types
and messages).  test_ndarray_api.py replays every case on mx_ndarray.

Run with MXNet 1.9.1 installed:
``OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_mxnet_ndarray_reference.py``
Keys and calls are Python source, evaluated with ``np`` and ``x`` (the
float32 array ``arange(24).reshape(2, 3, 4)``) in scope.
"""
import json
import os
import warnings

import mxnet as mx
import numpy as np

warnings.simplefilter("ignore")

GET_KEYS = ["1", "-1", "(1, 2)", "(1, 2, 3)", "(-1, -1, -1)", "(0, slice(1, 3))",
            "(slice(None), [0, 2])", "([0, 1], slice(None), 1)", "(Ellipsis, None, 1)",
            "([0, 1], None, [1, 2])", "(1, [0, 2], [1, 3])", "(slice(None, None, -1), 0, 0)",
            "(np.int64(1), slice(1, None))", "([[0], [1]], [0, 2])", "(0, Ellipsis, [1, 2])",
            "(slice(0, 2), [1, 0], None)", "(range(2), 0)"]
SET_CASES = [("(1, 2, 3)", "-1"), ("(0, slice(1, 3))", "np.array([7, 8, 9, 10])"),
             ("(slice(None), [0, 2])", "-2"), ("([0, 1], slice(None), 1)", "np.arange(3)"),
             ("(1, [0, 2], [1, 3])", "np.array([5, 6])"),
             ("(Ellipsis, 1)", "mx.nd.array([[1, 2, 3]])")]
ERROR_KEYS = ["2", "-3", "(0, 3)", "(0, 0, 0, 0)", "1.5", "'a'"]
FLUENT = ["x.sum()", "x.sum(axis=1)", "x.argmax(axis=2)", "x.argmax()", "x.max(axis=(0, 2))",
          "x.mean(axis=0, keepdims=True)", "x.norm()", "x.relu()", "x.softmax()",
          "x.log_softmax(axis=1)", "x.clip(3, 9)", "x.abs()", "x.sign()", "x.exp()",
          "x.slice_axis(axis=1, begin=0, end=2)", "x.take(mx.nd.array([1, 0]))",
          "x.one_hot(3)", "x.transpose(axes=(2, 0, 1))", "x.T", "x.flatten()",
          "x.expand_dims(1)", "x.squeeze()", "x[0:1].squeeze()", "x[0:1].squeeze(axis=0)",
          "x.broadcast_to((2, 2, 3, 4))", "x[0:1].broadcast_like(x)", "x.reshape_like(x.T)",
          "x.zeros_like()", "x.ones_like()", "x.reshape(-1, 4)", "x.reshape(shape=(4, 6))",
          "x.shape_array()", "x.size_array()", "x.split(num_outputs=2, axis=2)[1]",
          "x.slice(begin=(0, 1), end=(2, 3))", "x.astype('int32')", "x.round()",
          "x.sqrt()", "x.square()", "x.reciprocal()", "x.sigmoid()", "x.tanh()",
          "x.prod(axis=1)", "x.nansum()", "x.floor()", "x.log1p()", "x.rsqrt()",
          "x.argmin(axis=0)", "x.min()", "x.argmax_channel()", "x.reshape_like(x)",
          "x[0:1].broadcast_axes(axis=0, size=3)", "x.ceil()", "x.trunc()", "x.fix()", "x.rint()",
          "x.cbrt()", "x.rcbrt()", "x.expm1()", "x.log()", "x.log2()", "x.log10()",
          "x.sin()", "x.cos()", "x.tan()", "x.sinh()", "x.cosh()", "x.degrees()",
          "x.radians()", "(x / 30).arcsin()", "(x / 30).arccos()", "x.arctan()",
          "x.arcsinh()", "(x + 1).arccosh()", "(x / 30).arctanh()", "x.nanprod(axis=2)",
          "-x", "abs(-x)", "x % 5", "7 % (x + 1)", "x ** 2", "2 ** (x / 8)", "x / 4",
          "1 / (x + 1)", "np.float32(2) * x", "x + np.int64(3)", "x == 3", "x != 3", "x > 3",
          "x >= 3", "x < 3", "x <= 3", "3 < x", "3 - x"]
FLUENT_ERRORS = ["x.broadcast_to((3, 3, 4))", "x.broadcast_to((3, 4))", "x.asscalar()",
                 "bool(x)", "x + 'a'", "x.reshape((2, 2), foo=1)", "x.squeeze(axis=0)",
                 "x.tostype('csr')", "x == None"]


def result(a):
    if isinstance(a, mx.nd.NDArray):
        return {"shape": list(a.shape), "dtype": np.dtype(a.dtype).name,
                "values": a.asnumpy().astype(np.float64).ravel().tolist()}
    return {"python": repr(a), "type": type(a).__name__}


def error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (recorded, whatever it is)
        return {"error": type(e).__name__, "message": str(e).split("\n")[0]}
    return {"error": None}


def main():
    env = {"np": np, "mx": mx}
    x = mx.nd.arange(24).reshape((2, 3, 4))
    env["x"] = x
    out = {"get": {k: result(x[eval(k, env)]) for k in GET_KEYS}, "set": {}, "errors": {},
           "fluent": {}, "fluent_errors": {}}
    for key, value in SET_CASES:
        y = x.copy()
        y[eval(key, env)] = eval(value, env)
        out["set"][f"{key} = {value}"] = result(y)
    for k in ERROR_KEYS:
        out["errors"][k] = error(lambda: x[eval(k, env)])
    for expr in FLUENT:
        out["fluent"][expr] = result(eval(expr, env))
    for expr in FLUENT_ERRORS:
        out["fluent_errors"][expr] = error(lambda: eval(expr, env))
    one = mx.nd.array([3.5])
    out["misc"] = {"repr_2x3": repr(mx.nd.ones((2, 3))),
                   "repr_int": repr(mx.nd.ones((2,), dtype="int32")),
                   "asscalar_type": type(one.asscalar()).__name__,
                   "iter_shapes": [list(r.shape) for r in mx.nd.array([1, 2, 3])],
                   "stype": x.stype, "len": len(x)}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxnet_ndarray_reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
