"""gather_nd, scatter_nd and _scatter_set_nd against NumPy's advanced
indexing."""
import numpy as np
import pytest

from mx_engine.base import MXNetError
from mx_ops import invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
RNG = np.random.default_rng(5)


def _data(shape, dtype):
    return (np.arange(int(np.prod(shape))) % 97).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, m, ys", [((5,), 1, (3,)), ((4, 5), 1, (2, 3)), ((4, 5), 2, (6,)),
                                          ((2, 3, 4), 2, ()), ((2, 3, 4), 3, (2, 2)),
                                          ((3, 0, 2), 1, (4,))])
def test_gather_nd_matches_numpy(dtype, shape, m, ys):
    data = _data(shape, dtype)
    idx = np.stack([RNG.integers(-n, n, ys) if n else np.zeros(ys, int)
                    for n in shape[:m]]).astype(np.int32)
    want = data[tuple(idx)]
    np.testing.assert_array_equal(invoke("gather_nd", [data, idx]), want)
    np.testing.assert_array_equal(invoke("gather_nd", [data, idx.astype(np.float32)]), want)
    out = np.ones_like(want)
    invoke("gather_nd", [data, idx], out=out, req="add")
    np.testing.assert_array_equal(out, (want + np.ones_like(want)).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_nd_and_scatter_set_nd(dtype):
    lhs = _data((4, 3, 2), dtype)
    idx = np.array([[0, 3, -1], [2, 0, 1]], np.int64)        # tuples (0,2), (3,0), (3,1)
    rows = (np.arange(3 * 2).reshape(3, 2) + 100).astype(dtype)
    want = lhs.copy()
    want[tuple(idx)] = rows
    np.testing.assert_array_equal(invoke("_scatter_set_nd", [lhs, rows, idx], shape=(4, 3, 2)),
                                  want)
    zeros = np.zeros_like(lhs)
    zeros[tuple(idx)] = rows
    np.testing.assert_array_equal(invoke("scatter_nd", [rows, idx], shape=(4, 3, 2)), zeros)
    acc = np.ones_like(lhs)
    invoke("scatter_nd", [rows, idx], shape=(4, 3, 2), out=acc, req="add")
    np.testing.assert_array_equal(acc, (np.ones_like(lhs) + zeros).astype(dtype))
    inplace = lhs.copy()
    invoke("_scatter_set_nd", [inplace, rows, idx], out=inplace, req="inplace")
    np.testing.assert_array_equal(inplace, want)


def test_scatter_duplicate_tuples_last_wins():
    idx = np.array([[0, 3, 0, -4], [2, 1, 2, 2]])        # (0, 2) three times
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = invoke("scatter_nd", [rows, idx], shape=(4, 3, 2))
    assert out[0, 2].tolist() == [6, 7] and out[3, 1].tolist() == [2, 3]
    lhs = np.zeros((4, 3, 2), np.float32)
    assert invoke("_scatter_set_nd", [lhs, rows, idx])[0, 2].tolist() == [6, 7]


def test_errors_name_the_op_argument_and_shapes():
    data = np.zeros((4, 5), np.float32)
    with pytest.raises(ShapeError, match=r"gather_nd: argument 'indices' of shape \(3, 2\) must "
                                         r"have a first axis M with 1 <= M <= 2"):
        invoke("gather_nd", [data, np.zeros((3, 2), np.int32)])
    with pytest.raises(MXNetError, match="gather_nd: argument 'indices' holds an index out of "
                                         "range"):
        invoke("gather_nd", [data, np.array([[4]], np.int32)])
    with pytest.raises(ShapeError, match=r"_scatter_set_nd: argument 'rhs' has shape \(2,\); "
                                         r"with 'indices' of shape \(1, 2\) into \(4, 5\) it "
                                         r"must be \(2, 5\)"):
        invoke("_scatter_set_nd", [data, np.zeros(2, np.float32), np.zeros((1, 2), np.int32)])
    with pytest.raises(TypeInferenceError, match="'rhs' has dtype int32"):
        invoke("_scatter_set_nd", [data, np.zeros((2, 5), np.int32), np.zeros((1, 2), np.int32)])
    with pytest.raises(MXNetError, match="req 'add' is not supported"):
        invoke("_scatter_set_nd", [data, np.zeros((2, 5), np.float32),
                                   np.zeros((1, 2), np.int32)], out=data.copy(), req="add")
