import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError

RNG = np.random.default_rng(9)
DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip(dtype):
    x = RNG.integers(0 if dtype == "uint8" else -9, 10, (4, 5)).astype(dtype)
    np.testing.assert_array_equal(invoke("clip", [x], a_min=1, a_max=5), np.clip(x, 1, 5))
    out = np.ones((4, 5), dtype)
    invoke("clip", [x], out=out, req="add", a_min="2", a_max="3")
    np.testing.assert_array_equal(out, 1 + np.clip(x, 2, 3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cond_dtype", ["float32", "int32", "uint8"])
def test_where(dtype, cond_dtype):
    x = RNG.integers(0, 9, (3, 4)).astype(dtype)
    y = RNG.integers(0, 9, (3, 4)).astype(dtype)
    cond = RNG.integers(0, 2, (3, 4)).astype(cond_dtype)
    np.testing.assert_array_equal(invoke("where", [cond, x, y]), np.where(cond != 0, x, y))
    rows = np.array([1, 0, 1], cond_dtype)
    np.testing.assert_array_equal(invoke("where", [rows, x, y]),
                                  np.where(rows[:, None] != 0, x, y))


@pytest.mark.parametrize("call, exc, text", [
    (lambda: invoke("clip", [np.ones(2)], a_min=3, a_max=1), ShapeError, "'a_min' (3.0) exceeds"),
    (lambda: invoke("clip", [np.ones(2)], a_min=0), ValueError, "'a_max' is required"),
    (lambda: invoke("where", [np.ones(2), np.ones(3), np.ones(3)]), ShapeError,
     "argument 'condition' has shape (2,)"),
    (lambda: invoke("where", [np.ones(3), np.ones(3), np.ones(4)]), ShapeError,
     "'y' has shape (4,), which differs from 'x' (3,)"),
    (lambda: invoke("where", [np.ones(3), np.ones(3), np.ones(3, np.int32)]), TypeInferenceError,
     "'y' has dtype int32, which differs from 'x' float64"),
])
def test_select_errors(call, exc, text):
    with pytest.raises(exc) as info:
        call()
    assert text in str(info.value)
