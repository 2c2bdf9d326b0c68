"""topk, sort and argsort against NumPy's stable argsort: every ret_typ,
is_ascend, axis (negative, None), k (k < 1: all), index dtype, data dtype,
req; ties in index order, NaN largest; the gradient against finite
differences; MXNet 1.9.1's outputs on a small case."""
import numpy as np
import pytest

from mx_ops import invoke, registry
from mx_ops.core.partial_infer import infer_types as partial_types
from mx_ops.core.registry import ShapeError
from mx_ops.test_utils import check_numeric_gradient

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
INDEX_DTYPES = ["float16", "float32", "float64", "int32", "int64", "uint8"]
rng = np.random.default_rng(3)


def visible(op, inputs, **params):
    """invoke's visible outputs (sort and topk 'value' hide their indices)."""
    got = invoke(op, inputs, **params)
    got = got if isinstance(got, (list, tuple)) else [got]
    p = registry.get(op).parse_params(params)
    return got[:registry.get(op).visible_output_count(p)]


def infer_shapes(op, params, shapes):
    return registry.get(op).infer_shape(registry.get(op).parse_params(params), shapes)


def infer_types(op, params, dtypes):
    return registry.get(op).infer_type(registry.get(op).parse_params(params), dtypes)


def order(x, axis, asc):
    """Stable order along axis (ties by index), NaN largest; axis None: flat."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    x = np.moveaxis(x, axis, -1)
    if asc:
        idx = np.argsort(x, axis=-1, kind="stable")
    else:
        n = x.shape[-1]
        idx = (n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable"))[..., ::-1]
    return np.moveaxis(idx, -1, axis)


def reference(x, axis, k, ret_typ, asc, dtype="float32"):
    flat = axis is None
    xs = x.reshape(-1) if flat else x
    ax = 0 if flat else axis
    idx = order(x, axis, asc)
    k = idx.shape[ax] if k < 1 else k
    idx = np.take(idx, np.arange(k), axis=ax)
    vals = np.take_along_axis(xs, idx, axis=ax)
    if ret_typ == "mask":
        m = np.zeros_like(xs)
        np.put_along_axis(m, idx, 1, axis=ax)
        return [m.reshape(x.shape)]
    out = {"value": [vals, idx], "both": [vals, idx], "indices": [idx]}[ret_typ]
    return [out[0]] + [o.astype(dtype) for o in out[1:]] if ret_typ != "indices" \
        else [idx.astype(dtype)]


def data(shape, dtype):
    """Values with ties (small integers), exact in every dtype."""
    lo = 0 if dtype == "uint8" else -5
    return rng.integers(lo, 6, shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_every_ret_typ_axis_and_order(dtype):
    x = data((3, 5, 4), dtype)
    for axis in (0, 1, -1, -2, None):
        n = x.size if axis is None else x.shape[axis]
        for k in (1, 2, n, 0, -1):
            for ret in ("value", "indices", "mask", "both"):
                for asc in (False, True):
                    got = invoke("topk", [x], axis=axis, k=k, ret_typ=ret, is_ascend=asc)
                    got = got if isinstance(got, (list, tuple)) else [got]
                    want = reference(x, axis, k, ret, asc)
                    assert len(got) == len(want)      # value: the hidden indices too
                    for g, w in zip(got, want):
                        assert g.dtype == w.dtype
                        np.testing.assert_array_equal(g, w, err_msg=f"{axis} {k} {ret} {asc}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pattern", ["random", "ties", "ascending", "descending"])
def test_topk_small_k_one_pass_selection(dtype, pattern):
    # k <= 64 with k * 8 <= n selects in one pass; an input ordered against
    # the request makes every element enter and falls back to nth_element.
    n = 600
    if pattern == "random":
        x = rng.permutation(n).reshape(1, n) % 250
    elif pattern == "ties":
        x = data((1, n), dtype)
    else:
        x = np.arange(n).reshape(1, n) % 120
        x = x if pattern == "ascending" else x[:, ::-1]
    x = np.concatenate([x, x[:, ::-1]]).astype(dtype)
    xt = np.ascontiguousarray(x.T)                     # the axis strided (inner > 1)
    for k in (1, 5, 64, 75):
        for asc in (False, True):
            for arr, axis in ((x, -1), (xt, 0)):
                got = invoke("topk", [arr], axis=axis, k=k, ret_typ="both", is_ascend=asc)
                for g, w in zip(got, reference(arr, axis, k, "both", asc)):
                    np.testing.assert_array_equal(g, w, err_msg=f"{k} {asc} {axis}")


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_index_dtypes(index_dtype):
    x = rng.permutation(200).astype("float32").reshape(2, 100)
    got = invoke("topk", [x], k=7, ret_typ="both", dtype=index_dtype)
    want = reference(x, -1, 7, "both", False, index_dtype)
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == np.dtype(index_dtype)
    got = invoke("argsort", [x], dtype=index_dtype, is_ascend=False)
    np.testing.assert_array_equal(got, order(x, -1, False).astype(index_dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 300, 5000])        # the radix path from 256
def test_sort_and_argsort_long_rows(dtype, n):
    if np.dtype(dtype).kind == "f":
        x = rng.normal(0, 100, (3, n)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (3, n), endpoint=True, dtype=dtype)
    for asc in (True, False):
        for axis in (-1, 0, None):
            want = order(x, axis, asc)
            np.testing.assert_array_equal(invoke("argsort", [x], axis=axis, is_ascend=asc),
                                          want.astype("float32"))
            np.testing.assert_array_equal(
                visible("sort", [x], axis=axis, is_ascend=asc)[0],
                np.take_along_axis(x.reshape(-1) if axis is None else x, want,
                                   axis=0 if axis is None else axis))


def test_float_edges_nan_largest_signed_zero_equal():
    x = np.array([1.0, np.nan, -np.inf, 0.0, -0.0, np.inf, -1.0, np.nan], "float32")
    for dtype in ("float16", "float32", "float64"):
        xd = x.astype(dtype)
        np.testing.assert_array_equal(invoke("argsort", [xd]), [2, 6, 3, 4, 0, 5, 1, 7])
        np.testing.assert_array_equal(invoke("argsort", [xd], is_ascend=False),
                                      [1, 7, 5, 0, 3, 4, 6, 2])
        long = np.tile(xd, 64)               # the radix path sorts the same way
        np.testing.assert_array_equal(invoke("argsort", [long]), order(long, -1, True))


def test_mxnet_outputs():
    """Outputs MXNet 1.9.1 gave (distinct values: its ties are unspecified)."""
    x = np.array([[3, 1, 2, 5], [0, 7, 4, 6]], "float32")
    np.testing.assert_array_equal(invoke("topk", [x], axis=None, k=3), [5, 7, 3])
    np.testing.assert_array_equal(invoke("topk", [x], axis=None, k=3, ret_typ="mask"),
                                  [[0, 0, 0, 1], [0, 1, 0, 1]])
    np.testing.assert_array_equal(invoke("argsort", [x], axis=None), [4, 1, 2, 0, 6, 3, 7, 5])
    np.testing.assert_array_equal(visible("topk", [x], k=-1, ret_typ="value")[0],
                                  [[5, 3, 2, 1], [7, 6, 4, 0]])
    v, i = invoke("topk", [np.array([[1, 2], [3, 4]], "int32")], ret_typ="both", dtype="uint8")
    np.testing.assert_array_equal(v, [[2], [4]])
    assert v.dtype == np.int32 and i.dtype == np.uint8


def test_req_add_null_and_empty():
    x = rng.normal(size=(4, 6)).astype("float32")
    out = np.ones((4, 2), "float32")
    invoke("topk", [x], k=2, ret_typ="value", out=[out, np.zeros((4, 2), "float32")],
           req=["add", "null"])
    np.testing.assert_allclose(out, reference(x, -1, 2, "value", False)[0] + 1)
    m = np.full(x.shape, 2, "float32")
    invoke("topk", [x], k=3, ret_typ="mask", out=m, req="add")
    np.testing.assert_array_equal(m, reference(x, -1, 3, "mask", False)[0] + 2)
    e = np.zeros((0, 5), "float32")
    assert visible("sort", [e])[0].shape == (0, 5)
    assert invoke("argsort", [e], axis=0).shape == (0, 5)


def test_shapes_types_and_errors():
    assert infer_shapes("topk", {"k": 2, "ret_typ": "both"}, [(2, 4)]) == [(2, 2), (2, 2)]
    assert infer_shapes("topk", {"ret_typ": "mask", "axis": 0}, [(2, 4)]) == [(2, 4)]
    assert infer_shapes("topk", {"k": 3, "axis": None}, [(2, 4)]) == [(3,)]
    assert infer_shapes("sort", {"axis": None}, [(2, 4)])[0] == (8,)
    assert infer_types("topk", {"ret_typ": "both"}, ["float16"]) == ["float16", "float32"]
    assert infer_types("argsort", {"dtype": "int32"}, ["float64"]) == ["int32"]
    assert infer_types("topk", {"ret_typ": "mask"}, ["int8"]) == ["int8"]
    ins, outs = partial_types("topk", {"ret_typ": "value", "dtype": "int64"}, [None],
                              ["float64", None])
    assert ins == ["float64"] and outs == ["float64", "int64"]
    with pytest.raises(ShapeError, match="'k' is 5"):
        infer_shapes("topk", {"k": 5}, [(2, 4)])
    with pytest.raises(ShapeError, match="out of range"):
        infer_shapes("sort", {"axis": 2}, [(2, 4)])


@pytest.mark.parametrize("op,params", [
    ("sort", {}), ("sort", {"axis": 0, "is_ascend": False}), ("sort", {"axis": None}),
    ("topk", {"k": 2, "ret_typ": "value"}), ("topk", {"k": 3, "ret_typ": "both", "axis": 0}),
    ("topk", {"k": 4, "ret_typ": "value", "axis": None, "is_ascend": True}),
    ("topk", {"k": 2, "ret_typ": "indices"}), ("topk", {"k": 2, "ret_typ": "mask"}),
    ("argsort", {})])
def test_gradient(op, params):
    x = rng.permutation(24).reshape(4, 6) + rng.uniform(0, 0.5, (4, 6))   # distinct values
    check_numeric_gradient(op, [x], **params)


def test_gradient_req_add():
    x = rng.permutation(12).astype("float64").reshape(3, 4)
    g = rng.uniform(size=(3, 2))
    _, idx = invoke("topk", [x], k=2, ret_typ="both", dtype="int64")
    out = np.ones_like(x)
    invoke("_backward_topk", [g, idx, x], k=2, out=out, req="add")
    want = np.zeros_like(x)
    np.put_along_axis(want, idx, g, axis=-1)
    np.testing.assert_allclose(out, want + 1)
