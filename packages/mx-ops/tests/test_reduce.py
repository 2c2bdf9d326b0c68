"""Every reduction operator against a NumPy reference, with MXNet 1.x's
shapes (src/operator/tensor/broadcast_reduce_op.h) and dtypes."""
import itertools
import math

import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ops.reduce import reduce

RNG = np.random.default_rng(0)
ALL_DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
FLOATS = ["float32", "float64", "float16"]
TOL = {"float16": 3e-3, "float32": 2e-6, "float64": 1e-12}
AXIS_OPS = ["sum", "mean", "prod", "nansum", "nanprod", "max", "min"]


def data(shape, dtype, low=-5.0, high=5.0):
    if np.dtype(dtype).kind in "iu":
        lo = 0 if np.dtype(dtype).kind == "u" else max(int(low), -9)
        return RNG.integers(lo, max(int(high), lo + 1) + 1, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def mx_shape(shape, axis, keepdims, exclude):
    """MXNet's ReduceAxesShapeImpl, written out independently."""
    axis = (axis,) if isinstance(axis, int) else axis
    ndim = len(shape)
    if axis is None or axis == ():
        return (1,) * ndim if keepdims else (1,)
    axes = {a % ndim for a in axis}
    red = set(range(ndim)) - axes if exclude else axes
    if keepdims:
        return tuple(1 if i in red else e for i, e in enumerate(shape))
    return tuple(e for i, e in enumerate(shape) if i not in red) or (1,)


def reference(name, x, axis, keepdims=False, exclude=False):
    """NumPy on float64 (int64 for integers), cast to the input dtype."""
    axis = (axis,) if isinstance(axis, int) else axis
    ndim = x.ndim
    if axis is None or axis == ():
        red = tuple(range(ndim))
    else:
        axes = {a % ndim for a in axis}
        red = tuple(sorted(set(range(ndim)) - axes if exclude else axes))
    integer = x.dtype.kind in "iu"
    w = x.astype(np.int64 if integer else np.float64)
    with np.errstate(all="ignore"):
        if name == "mean" and integer:
            s = w.sum(axis=red, keepdims=True)
            n = math.prod(x.shape[a] for a in red)
            r = np.sign(s) * (np.abs(s) // n) if n else np.zeros_like(s)
        elif name == "mean":
            r = w.sum(axis=red, keepdims=True) / math.prod(x.shape[a] for a in red)
        else:
            fn = {"sum": np.sum, "prod": np.prod, "nansum": np.nansum, "nanprod": np.nanprod,
                  "max": np.max, "min": np.min}[name]
            r = fn(w, axis=red, keepdims=True)
    return r.reshape(mx_shape(x.shape, axis, keepdims, exclude)).astype(x.dtype)


def check(got, want, dtype):
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype])


def operand(name, shape, dtype):
    if name in ("prod", "nanprod"):
        return data(shape, dtype, 0.5, 1.5) if np.dtype(dtype).kind == "f" else \
            data(shape, dtype, -2, 2)
    return data(shape, dtype)


# (shape, axis) cases for every op and dtype: 0-d to 5-d, negative axes,
# tuples, and MXNet's axis=() (every axis).
CASES = [((), None), ((), ()), ((7,), None), ((7,), 0), ((7,), -1), ((3, 4), 1), ((3, 4), 0),
         ((3, 4), (0, 1)), ((2, 3, 4), (0, 2)), ((2, 3, 4), -2), ((2, 1, 3, 2), (1, 3)),
         ((2, 3, 2, 2, 3), (0, 2, 4)), ((2, 3, 2, 2, 3), (-1, -2)), ((4, 37), 1),
         ((33, 5), 0), ((41, 67), 0), ((6, 50, 17), (0, 2)), ((9, 3, 40), 1)]


@pytest.mark.parametrize("name", AXIS_OPS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_against_numpy(name, dtype):
    for shape, axis in CASES:
        x = operand(name, shape, dtype)
        for keepdims in (False, True):
            got = invoke(name, [x], axis=axis, keepdims=keepdims)
            check(got, reference(name, x, axis, keepdims), dtype)


@pytest.mark.parametrize("name", AXIS_OPS)
def test_every_axis_combination_of_3d(name):
    x = operand(name, (3, 4, 5), "float32")
    subsets = [c for k in range(4) for c in itertools.combinations(range(3), k)]
    for axes in subsets:
        for neg in (False, True):
            axis = tuple(a - 3 for a in axes) if neg else axes
            for keepdims, exclude in itertools.product((False, True), repeat=2):
                got = invoke(name, [x], axis=axis, keepdims=keepdims, exclude=exclude)
                check(got, reference(name, x, axis, keepdims, exclude), "float32")


def test_mxnet_shapes():
    x = np.ones((2, 3, 4), np.float32)
    assert invoke("sum", [x]).shape == (1,)                  # not () as in NumPy
    assert invoke("sum", [x], axis=()).shape == (1,)
    assert invoke("sum", [x], keepdims=True).shape == (1, 1, 1)
    assert invoke("sum", [x], axis=(0, 1, 2)).shape == (1,)
    assert invoke("sum", [x], axis=1, exclude=True).shape == (3,)
    assert invoke("sum", [x], axis=(0, 2), exclude=True).shape == (2, 4)
    assert invoke("sum", [x], axis=(0, 2), exclude=True, keepdims=True).shape == (2, 1, 4)
    assert invoke("sum", [x], axis=(0, 1, 2), exclude=True).shape == (2, 3, 4)  # reduces none
    assert invoke("sum", [x], axis=(), exclude=True).shape == (1,)             # () is every axis
    assert invoke("sum", [np.float32(2)]).shape == (1,)
    assert invoke("sum", [np.float32(2)], keepdims=True).shape == ()


def test_empty_reductions():
    for dtype in ("float32", "int32"):
        x = np.ones((0, 3), dtype)
        check(invoke("sum", [x]), np.zeros(1, dtype), dtype)
        check(invoke("sum", [x], axis=0), np.zeros(3, dtype), dtype)
        check(invoke("prod", [x], axis=0), np.ones(3, dtype), dtype)
        assert invoke("sum", [x], axis=1).shape == (0,)
        check(invoke("nansum", [x], axis=0, keepdims=True), np.zeros((1, 3), dtype), dtype)
    assert np.isnan(invoke("mean", [np.ones((0, 3), np.float32)], axis=0)).all()
    check(invoke("mean", [np.ones((0, 3), np.int32)], axis=0), np.zeros(3, np.int32), "int32")
    for name in ("max", "min"):
        with pytest.raises(ShapeError, match=rf"{name}: argument 'data' has shape \(0, 3\), "
                                             rf"of size 0; {name} cannot reduce an empty array"):
            invoke(name, [np.ones((0, 3), np.float32)], axis=0)


def test_nan_handling():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    check(invoke("nansum", [x], axis=1), np.array([4, 15], np.float32), "float32")
    check(invoke("nanprod", [x], axis=1), np.array([3, 120], np.float32), "float32")
    for name in ("max", "min", "sum"):
        got = invoke(name, [x], axis=1)
        assert np.isnan(got[0]) and not np.isnan(got[1])
    got = invoke("max", [x], axis=0)
    assert np.isnan(got[1]) and got[0] == 4 and got[2] == 6


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_and_inf_in_long_runs_and_blocks(dtype):
    # Long runs take the 8-lane loop; a kept inner axis over 1024 takes blocks.
    for shape in [(5, 40), (9, 2100)]:
        x = data(shape, dtype)
        x[2, 30] = np.nan
        x[3, 17] = np.inf
        x[4, 19] = -np.inf
        for axis in (0, 1, None):
            for name in AXIS_OPS:
                if name in ("prod", "nanprod"):
                    continue
                got = invoke(name, [x], axis=axis)
                want = reference(name, x, axis)
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                           rtol=TOL[dtype] * 10)
            for name in ("argmax", "argmin"):
                got = invoke(name, [x], axis=axis)
                want = getattr(np, name)(x, axis=axis)
                np.testing.assert_array_equal(got.ravel(), np.ravel(want).astype(dtype))


def test_mean_of_integers_truncates_in_input_dtype():
    x = np.array([[-3, -4], [5, 4], [7, 1]], np.int32)
    got = invoke("mean", [x], axis=1)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [-3, 4, 4])


def test_integer_accumulation_is_exact_then_wraps():
    x = np.full((1000,), 100, np.int8)             # 100000 wraps to int8 as NumPy's astype
    check(invoke("sum", [x]), np.array([100000]).astype(np.int8), "int8")
    check(invoke("mean", [x]), np.array([100], np.int8), "int8")
    big = np.full((3,), 2**62, np.int64)
    check(invoke("sum", [big]), np.array([-(2**62)], np.int64), "int64")   # wrap-around


def test_float_accumulates_in_double():
    x = np.full((1 << 20,), 0.1, np.float32)
    got = invoke("sum", [x])[0]
    assert abs(float(got) - 0.1 * (1 << 20)) < 0.02          # float32 accumulation: ~1e2 off
    x16 = np.full((4096,), 1.0, np.float16)
    assert invoke("sum", [x16])[0] == 4096                   # float16 accumulation stops at 2048


@pytest.mark.parametrize("name", ["sum", "max", "mean", "norm", "argmax"])
def test_every_req(name):
    x = data((4, 5), "float32")
    kw = {"axis": 1}
    want = invoke(name, [x], **kw)
    base = data(want.shape, "float32")
    out = base.copy()
    invoke(name, [x], out=out, req="add", **kw)
    np.testing.assert_allclose(out, base + want, rtol=1e-6)
    out = base.copy()
    invoke(name, [x], out=out, req="null", **kw)
    np.testing.assert_array_equal(out, base)
    out = base.copy()
    invoke(name, [x], out=out, req="write", **kw)
    np.testing.assert_array_equal(out, want)


def test_req_add_integers():
    x = data((3, 4), "int32")
    out = np.full((3,), 7, np.int32)
    invoke("sum", [x], out=out, req="add", axis=1)
    np.testing.assert_array_equal(out, 7 + x.sum(axis=1))


def test_mxnet_string_params():
    x = data((2, 3, 4), "float32")
    check(invoke("sum", [x], axis="(0, 2)", keepdims="True", exclude="False"),
          reference("sum", x, (0, 2), True), "float32")
    check(invoke("sum", [x], axis="1"), reference("sum", x, (1,)), "float32")
    check(invoke("sum", [x], axis="()"), reference("sum", x, ()), "float32")
    check(invoke("max", [x], axis="None"), reference("max", x, None), "float32")
    check(invoke("sum", [x], axis="[0,1]", exclude="1"), reference("sum", x, (0, 1), False, True),
          "float32")
    np.testing.assert_array_equal(invoke("argmax", [x], axis="-1", keepdims="False"),
                                  x.argmax(-1).astype(np.float32))
    np.testing.assert_allclose(invoke("norm", [x], ord="1", axis="(1,)", out_dtype="float64"),
                               np.abs(x.astype(np.float64)).sum(1))


def test_aliases_and_registration():
    assert get("sum_axis") is get("sum")
    assert get("max_axis") is get("max")
    assert get("min_axis") is get("min")
    assert set(reduce.REDUCE) == set(AXIS_OPS)
    assert list(get("norm").params) == ["ord", "axis", "out_dtype", "keepdims"]
    assert list(get("sum").params) == ["axis", "keepdims", "exclude"]
    assert list(get("argmax").params) == ["axis", "keepdims"]
    assert "Aliases: sum_axis." in get("sum").docstring()


# --- argmax / argmin / argmax_channel ---------------------------------------------------
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_arg_against_numpy(name, dtype):
    fn = getattr(np, name)
    for shape in [(7,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (2, 3, 2, 2, 3), (5, 33), (33, 5)]:
        x = data(shape, dtype, -2, 2).round(0).astype(dtype)     # many ties: first one wins
        for axis in [None] + list(range(-len(shape), len(shape))):
            for keepdims in (False, True):
                got = invoke(name, [x], axis=axis, keepdims=keepdims)
                assert got.dtype == np.dtype(dtype)
                if axis is None:
                    want = np.array(fn(x)).reshape((1,) * x.ndim if keepdims else (1,))
                elif x.ndim == 1:
                    want = np.array(fn(x, axis=axis)).reshape(1)       # MXNet: (1,) for 1-d
                else:
                    want = fn(x, axis=axis, keepdims=keepdims)
                np.testing.assert_array_equal(got, want.astype(dtype))


def test_arg_nan_and_scalars():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 5.0, 6.0, 6.0]], np.float64)
    np.testing.assert_array_equal(invoke("argmax", [x], axis=1), [1, 2])
    np.testing.assert_array_equal(invoke("argmin", [x], axis=1), [1, 0])
    np.testing.assert_array_equal(invoke("argmax", [x.T.copy()], axis=0), [1, 2])
    np.testing.assert_array_equal(invoke("argmax", [x]), [1])
    assert invoke("argmax", [np.float32(3)]).shape == (1,)
    assert invoke("argmax", [np.ones((3, 1), np.float32)], axis=1).tolist() == [0, 0, 0]
    assert invoke("argmax", [np.ones((0, 4), np.float32)], axis=1).shape == (0,)


def test_argmax_channel():
    x = data((3, 5), "float32")
    np.testing.assert_array_equal(invoke("argmax_channel", [x]), x.argmax(1).astype(np.float32))
    y = data((2, 4, 3), "float64")
    got = invoke("argmax_channel", [y])
    assert got.shape == (2, 3) and got.dtype == np.float64     # MXNet: axis=1, not the last
    np.testing.assert_array_equal(got, y.argmax(1))


# --- norm --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_norm_against_numpy(dtype):
    for shape, axis in CASES:
        x = data(shape, dtype)
        w = x.astype(np.float64)
        axes = (axis,) if isinstance(axis, int) else axis
        red = tuple(range(x.ndim)) if not axes else tuple(a % x.ndim for a in axes)
        for ord_ in (1, 2):
            for keepdims in (False, True):
                got = invoke("norm", [x], ord=ord_, axis=axis, keepdims=keepdims)
                want = (np.abs(w).sum(axis=red, keepdims=True) if ord_ == 1 else
                        np.sqrt((w * w).sum(axis=red, keepdims=True)))
                want = want.reshape(mx_shape(x.shape, axis, keepdims, False))
                if np.dtype(dtype).kind in "iu":
                    want = np.trunc(want)
                check(got, want.astype(dtype), dtype)


def test_norm_out_dtype_and_default():
    x = data((3, 4), "float16")
    got = invoke("norm", [x], out_dtype="float64")
    assert got.dtype == np.float64 and got.shape == (1,)
    np.testing.assert_allclose(got, [np.linalg.norm(x.astype(np.float64))], rtol=1e-6)
    got = invoke("norm", [np.array([[3, 4], [6, 8]], np.int32)], axis=1, out_dtype="float32")
    np.testing.assert_array_equal(got, np.array([5, 10], np.float32))
    got = invoke("norm", [np.array([3.7, 0.0], np.float32)], ord=1, out_dtype="int8")
    assert got.dtype == np.int8 and got.tolist() == [3]


# --- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, text", [
    (lambda: invoke("sum", [np.ones((2, 3))], axis=2), ShapeError,
     "sum: argument 'axis' holds axis 2, which is out of range for 'data' of shape (2, 3) "
     "(2 dimensions)"),
    (lambda: invoke("max", [np.ones((2, 3))], axis=(0, -3)), ShapeError,
     "max: argument 'axis' holds axis -3, which is out of range"),
    (lambda: invoke("mean", [np.ones((2, 3))], axis=(1, -1)), ShapeError,
     "mean: argument 'axis' (1, -1) names axis 1 twice"),
    (lambda: invoke("sum", [np.float32(1)], axis=0), ShapeError,
     "sum: argument 'axis' holds axis 0, which is out of range for 'data' of shape ()"),
    (lambda: invoke("norm", [np.ones((2, 3))], axis=5), ShapeError,
     "norm: argument 'axis' holds axis 5"),
    (lambda: invoke("argmax", [np.ones((2, 3))], axis=2), ShapeError,
     "argmax: argument 'axis' is 2, which is out of range for 'data' of shape (2, 3)"),
    (lambda: invoke("argmin", [np.ones((2, 0))], axis=1), ShapeError,
     "argmin: cannot search axis 1 of 'data' of shape (2, 0), which has size 0"),
    (lambda: invoke("argmax", [np.ones((0,))]), ShapeError,
     "argmax: cannot search 'data' of shape (0,), which is empty"),
    (lambda: invoke("argmax_channel", [np.ones((3,))]), ShapeError,
     "argmax_channel: argument 'data' must have at least 2 dimensions, got shape (3,)"),
    (lambda: invoke("argmax", [np.ones(3, np.int32)]), TypeInferenceError,
     "argmax: dtype int32 is not supported; supported: float16, float32, float64"),
    (lambda: invoke("norm", [np.ones(3)], ord=3), ParamError,
     "norm: argument 'ord' must be in [1, 2]; got 3"),
    (lambda: invoke("norm", [np.ones(3)], out_dtype="uint8"), ParamError,
     "norm: argument 'out_dtype' must be one of"),
    (lambda: invoke("sum", [np.ones(3)], keepdims="maybe"), ParamError,
     "sum: argument 'keepdims' must be a bool"),
    (lambda: invoke("sum", [np.ones(3)], axis="(0, x)"), ParamError, "sum: argument 'axis'"),
    (lambda: invoke("argmax", [np.ones(3)], exclude=True), ParamError,
     "argmax: unknown argument 'exclude'; its arguments are: axis, keepdims"),
    (lambda: invoke("sum", [np.ones(3)], out=np.ones(3)), ShapeError,
     "sum: output 0 must be float64 of shape (1,), got float64 of shape (3,)"),
])
def test_errors_name_the_op_and_argument(call, exc, text):
    with pytest.raises(exc) as info:
        call()
    assert text in str(info.value)


# --- GPU -----------------------------------------------------------------------------------
GPU_CASES = [(n, {"axis": a, "keepdims": k})
             for n in AXIS_OPS for a, k in [(None, False), ((0, 2), True), (-1, False)]] + \
    [("sum", {"axis": (1,), "exclude": True}), ("norm", {"ord": 1, "axis": 1}),
     ("norm", {}), ("norm", {"axis": (0, 2), "out_dtype": "float64"}),
     ("argmax", {"axis": 1}), ("argmin", {"axis": None}), ("argmax", {"axis": -1,
                                                                       "keepdims": True}),
     ("argmax_channel", {})]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "uint8"])
@pytest.mark.parametrize("name, kw", GPU_CASES)
def test_gpu_matches_cpu(name, kw, dtype):
    import cupy
    if name.startswith("arg") and dtype not in FLOATS:
        return
    x = operand(name, (3, 4, 5), dtype)
    if dtype in FLOATS and name.startswith("nan"):
        x[0, 1, 2] = np.nan
    want = invoke(name, [x], **kw)
    got = invoke(name, [cupy.asarray(x)], **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = max(TOL.get(dtype, 0), TOL.get(want.dtype.name, 0))
    if dtype in FLOATS or "out_dtype" in kw:
        np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64),
                                   want.astype(np.float64), rtol=tol)
    else:
        np.testing.assert_array_equal(cupy.asnumpy(got), want)
    base = operand("sum", want.shape, want.dtype.name)
    out = cupy.asarray(base)
    invoke(name, [cupy.asarray(x)], out=out, req="add", **kw)
    cpu = base.copy()
    invoke(name, [x], out=cpu, req="add", **kw)
    np.testing.assert_allclose(cupy.asnumpy(out).astype(np.float64), cpu.astype(np.float64),
                               rtol=tol)
    out = cupy.asarray(base)
    invoke(name, [cupy.asarray(x)], out=out, req="null", **kw)
    np.testing.assert_array_equal(cupy.asnumpy(out), base)


@pytest.mark.gpu
def test_gpu_nan_and_empty():
    import cupy
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 5.0, 6.0, 6.0]], np.float32)
    for name in ("argmax", "argmin", "max", "min", "nansum", "nanprod"):
        want = invoke(name, [x], axis=1)
        got = cupy.asnumpy(invoke(name, [cupy.asarray(x)], axis=1))
        np.testing.assert_array_equal(got, want)
    e = np.ones((0, 3), np.float32)
    for name in ("sum", "prod", "mean"):
        np.testing.assert_array_equal(cupy.asnumpy(invoke(name, [cupy.asarray(e)], axis=0)),
                                      invoke(name, [e], axis=0))
    np.testing.assert_array_equal(
        cupy.asnumpy(invoke("mean", [cupy.asarray(np.array([[-3, -4], [5, 4]], np.int32))],
                            axis=1)), [-3, 4])
