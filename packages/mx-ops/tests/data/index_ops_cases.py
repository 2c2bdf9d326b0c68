"""The edge cases recorded from MXNet 1.9.1 in index_ops_mxnet191.npz
(make_index_ops_reference.py) and replayed by tests/test_index_ops.py:
(case name, operator, inputs as NumPy arrays, parameters, head gradient
or None).  Deterministic: the random inputs come from fixed seeds."""
import numpy as np

_RNG = np.random.default_rng(15)


def _a(values, dtype="float32"):
    return np.array(values, dtype=dtype)


def _r(shape, dtype="float32", lo=-3, hi=3):
    return _RNG.uniform(lo, hi, size=shape).astype(dtype)


CASES = []

# _eye: k beyond the matrix, M=0 (square), every dtype.
for i, (n, m, k, dt) in enumerate([(3, 0, 0, "float32"), (3, 4, 1, "int32"), (4, 3, -2, "uint8"),
                                   (3, 0, -5, "float64"), (2, 5, 4, "int8"), (0, 3, 0, "int64"),
                                   (1, 1, 0, "float16"), (3, 3, 3, "float32")]):
    CASES.append((f"eye{i}", "_eye", [], dict(N=n, M=m, k=k, dtype=dt), None))

# _linspace: endpoint on and off, num 0 and 1, descending, integer dtypes
# (float64 values, then C casts), last element against stop.
for i, (start, stop, num, ep, dt) in enumerate([
        (0, 1, 5, True, "float32"), (0, 1, 5, False, "float32"), (2, 3, 1, True, "float32"),
        (2, 3, 1, False, "float64"), (2, 3, 0, True, "float32"), (1.5, -2.5, 4, True, "int32"),
        (0.1, 0.7, 13, True, "float32"), (0.1, 0.7, 13, True, "float64"),
        (-3.3, 7.1, 11, False, "float64"), (0, 255, 7, True, "uint8"), (-1, 1, 9, True, "int8"),
        (1e-3, 1e3, 101, True, "float16"), (0, 1, -1, True, "float32")]):
    CASES.append((f"linspace{i}", "_linspace", [],
                  dict(start=start, stop=stop, num=num, endpoint=ep, dtype=dt), None))

# diag: 1-D makes a matrix (k shifts it), N-D extracts along axis1/axis2,
# negative axes, k out of the matrix, the gradient.
for i, (shape, k, a1, a2, dt) in enumerate([
        ((4,), 0, 0, 1, "float32"), ((3,), 2, 0, 1, "float64"), ((3,), -1, 0, 1, "int32"),
        ((3, 4), 0, 0, 1, "float32"), ((3, 4), 2, 0, 1, "float32"), ((3, 4), -2, 0, 1, "float64"),
        ((2, 3, 4), 0, 0, 1, "float32"), ((2, 3, 4), 1, 0, 2, "float32"),
        ((2, 3, 4), -1, -1, -3, "float32"), ((2, 3, 4, 5), 1, 3, 1, "float64"),
        ((2, 3), 3, 0, 1, "float32"), ((2, 3), -2, 0, 1, "float32"), ((2, 3), 4, 0, 1, "float32"),
        ((2, 3, 4), 0, 1, 1, "float32"), ((2, 3), 0, 0, 2, "float32"), ((3, 3), 0, 0, 1, "int8"),
        ((3, 3), 1, 1, 0, "float16")]):
    x = _r(shape, dt) if dt[0] == "f" else _RNG.integers(-5, 6, size=shape).astype(dt)
    CASES.append((f"diag{i}", "diag", [x], dict(k=k, axis1=a1, axis2=a2), None))
for i, (shape, k, a1, a2) in enumerate([((4,), 1, 0, 1), ((3, 5), -1, 0, 1),
                                        ((2, 3, 4), 1, 2, 0)]):
    x = _r(shape, "float64")
    n = len(x.shape)
    out = np.diag(x, k) if n <= 2 else np.diagonal(x, k, a1, a2)
    CASES.append((f"diag_grad{i}", "diag", [x], dict(k=k, axis1=a1, axis2=a2),
                  _r(out.shape, "float64")))

# ravel_multi_index / unravel_index: out-of-range and negative indices (not
# checked), a -1 leading dimension, float and integer data.
_IDX = _a([[3, 6, 6, 9, 0], [4, 5, 1, -1, 7]])
for i, (data, shape) in enumerate([
        (_IDX, (7, 6)), (_IDX, (-1, 6)), (_IDX.astype("int32"), (7, 6)),
        (_IDX.astype("int64"), (4, 3)), (_a([[1.7, -2.2], [3.9, 0.5]]), (5, 5)),
        (_a([[1, 2], [0, 3], [2, 1]], "float64"), (3, 4, 5)), (_a([[5, 2]]), (4,)),
        (_a([[1, 2], [0, 3]]), (4, 3, 2))]):
    CASES.append((f"ravel{i}", "_ravel_multi_index", [data], dict(shape=shape), None))
_FLAT = _a([22, 41, 37, -1, 100, 0, 7.9])
for i, (data, shape) in enumerate([
        (_FLAT, (7, 6)), (_FLAT, (-1, 6)), (_FLAT.astype("int32"), (7, 6)),
        (_FLAT.astype("int64"), (2, 3, 4)), (_FLAT, (50,))]):
    CASES.append((f"unravel{i}", "_unravel_index", [data], dict(shape=shape), None))

# _histogram: uniform bins (bin_cnt, range) in every dtype, edges rounded by
# integer dtypes, values on edges, NaN and infinities, explicit bin edges.
_H = _a([0, 1, 1, 2, 3, 3, 4, 5, -1, 2.5, 3.999])
for i, dt in enumerate(["float32", "float64", "float16", "int32", "int64", "uint8", "int8"]):
    CASES.append((f"hist_uniform{i}", "_histogram", [_H.astype(dt)],
                  dict(bin_cnt=3, range=(0, 4)), None))
    CASES.append((f"hist_rounded{i}", "_histogram", [_H.astype(dt)],
                  dict(bin_cnt=10, range=(0, 4)), None))
    CASES.append((f"hist_edges{i}", "_histogram", [_H.astype(dt), _a([0, 1, 3, 4], dt)], {},
                  None))
CASES.append(("hist_nan", "_histogram", [_a([0, np.nan, 1, np.inf, -np.inf, 0.999999, 2])],
              dict(bin_cnt=2, range=(0, 2)), None))
for i in range(6):
    lo = float(_RNG.uniform(-10, 10))
    hi = lo + float(_RNG.uniform(0.001, 20))
    cnt = int(_RNG.integers(1, 40))
    dt = "float32" if i % 2 == 0 else "float64"
    edges = np.linspace(lo, hi, cnt + 1).astype(dt)
    data = np.concatenate([_r((500,), dt, lo - 1, hi + 1), edges])
    CASES.append((f"hist_random{i}", "_histogram", [data], dict(bin_cnt=cnt, range=(lo, hi)),
                  None))
CASES.append(("hist_random_edges", "_histogram",
              [_r((300,), "float32"), np.sort(_r((9,), "float32"))], {}, None))
CASES.append(("hist_empty_range", "_histogram", [_a([1, 1, 2])], dict(bin_cnt=4, range=(1, 1)),
              None))

# contrib index_copy (repeated indices: the last wins; float indices
# truncate), index_array (negative and repeated axes) and boolean_mask
# (any nonzero selects; none selected; the gradient scattered back).
_OLD = _r((5, 3))
for i, (old, idx, new, og) in enumerate([
        (_OLD, _a([0, 4, 2]), _r((3, 3)), _r((5, 3), "float32")),
        (_OLD, _a([1, 1], "int64"), _r((2, 3)), _r((5, 3), "float32")),
        (_a([0, 1, 2, 3, 4], "float64"), _a([3.7], "float64"), _a([9], "float64"), None),
        (_r((4, 2, 3), "float64"), _a([3, 0], "int32"), _r((2, 2, 3), "float64"),
         _r((4, 2, 3), "float64"))]):
    CASES.append((f"index_copy{i}", "_contrib_index_copy", [old, idx, new], {}, og))
for i, (shape, axes) in enumerate([((2, 3), None), ((2, 3, 2), (-1, 0)), ((4,), (0,)),
                                   ((3, 2), (1, 1))]):
    CASES.append((f"index_array{i}", "_contrib_index_array", [_r(shape)],
                  {} if axes is None else dict(axes=axes), None))
for i, (data, mask, og) in enumerate([
        (_r((3, 2)), _a([0, 1, 1]), _r((2, 2))),
        (_r((3, 2)), _a([0.5, 0, -2]), None),
        (_r((3, 2)), _a([0, 0, 0]), None),
        (_r((4, 2, 3), "float64"), _a([1, 0, 0, 1], "int32"), _r((2, 2, 3), "float64")),
        (_r((4,)), _a([1, 1, 1, 1]), _r((4,)))]):
    CASES.append((f"boolean_mask{i}", "_contrib_boolean_mask", [data, mask], {}, og))

# contrib quadratic (float arithmetic truncated into integers; the
# gradient), div_sqrt_dim (integers divide by the divisor's integer part),
# allclose (NaN, infinities, tolerances), all_finite / multi_all_finite.
_Q = _a([[1, -2, 3], [0.5, 2, -1.25]])
for i, dt in enumerate(["float32", "float64", "float16", "int32", "uint8", "int8", "int64"]):
    x = np.abs(_Q).astype(dt) if dt == "uint8" else _Q.astype(dt)
    CASES.append((f"quadratic{i}", "_contrib_quadratic", [x], dict(a=2.5, b=-1.5, c=0.7),
                  None))
    CASES.append((f"div_sqrt_dim{i}", "_contrib_div_sqrt_dim",
                  [_r((2, 4), dt, 0, 9) if dt == "uint8" else _r((2, 4), dt, -9, 9)], {}, None))
CASES.append(("quadratic_grad", "_contrib_quadratic", [_r((3, 4), "float64")],
              dict(a=-1.5, b=0.25, c=3), _r((3, 4), "float64")))
CASES.append(("div_sqrt_dim_grad", "_contrib_div_sqrt_dim", [_r((2, 3, 5))], {}, _r((2, 3, 5))))
for i, (a, b, kw) in enumerate([
        (_a([1, 2, np.nan]), _a([1, 2.00001, np.nan]), {}),
        (_a([1, 2, np.nan]), _a([1, 2.00001, np.nan]), dict(equal_nan=False)),
        (_a([1, 2]), _a([1, 2.00001]), dict(rtol=0, atol=0)),
        (_a([1e10, 1e-7]), _a([1.00001e10, 1e-8]), {}),
        (_a([1e10, 1e-8]), _a([1.00001e10, 1e-9]), {}),
        (_a([np.inf, -np.inf, 3]), _a([np.inf, -np.inf, 3]), {}),
        (_a([np.inf, 1]), _a([-np.inf, 1]), {}),
        (_a([[1, 2], [3, 4]], "int32"), _a([[1, 2], [3, 5]], "int32"), dict(atol=1)),
        (_a([[1, 2], [3, 4]], "int32"), _a([[1, 2], [3, 5]], "int32"), {}),
        (_a([1.5, 2], "float64"), _a([1.5, 2 + 1e-12], "float64"), dict(rtol=0, atol=1e-13))]):
    CASES.append((f"allclose{i}", "_contrib_allclose", [a, b], kw, None))
for i, (arrays, kw) in enumerate([
        ([_a([1, 2])], {}), ([_a([1, np.inf])], {}), ([_a([np.nan], "float64")], {}),
        ([_a([1, -np.inf], "float16")], {}), ([_r((3, 4), "float64")], {})]):
    CASES.append((f"all_finite{i}", "all_finite", arrays, kw, None))
for i, (arrays, kw) in enumerate([
        ([_a([1, 2]), _a([3, np.inf])], dict(num_arrays=2)),
        ([_a([1, 2]), _a([3, 4], "float64"), _a([5], "float16")], dict(num_arrays=3)),
        ([_a([np.nan])], {})]):
    CASES.append((f"multi_all_finite{i}", "multi_all_finite", arrays, kw, None))
