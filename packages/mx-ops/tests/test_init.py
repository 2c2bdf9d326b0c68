import numpy as np
import pytest

from mx_ops import invoke
from mx_ops.registry import ShapeError

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4)])
def test_full(dtype, shape):
    got = invoke("_full", [], shape=shape, dtype=dtype, value=7)
    np.testing.assert_array_equal(got, np.full(shape, 7, dtype))
    out = np.ones(shape, dtype)
    invoke("_full", [], out=out, req="add", shape=shape, dtype=dtype, value="2")
    np.testing.assert_array_equal(out, np.full(shape, 3, dtype))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_cast_matches_numpy_for_values_every_dtype_holds(src, dst):
    x = np.array([0, 1, 2, 7, 100, 126], dtype=src)
    got = invoke("Cast", [x], dtype=dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, x.astype(dst))
    assert invoke("cast", [x.reshape(2, 3)], dtype=dst).shape == (2, 3)


def test_cast_truncates_floats_toward_zero():
    np.testing.assert_array_equal(invoke("Cast", [np.array([-1.7, 1.7], np.float32)],
                                         dtype="int32"), [-1, 1])


def test_bad_init_arguments():
    with pytest.raises(ShapeError, match="_full: argument 'shape' must hold non-negative"):
        invoke("_full", [], shape=(2, -1))
    with pytest.raises(ValueError, match="Cast: argument 'dtype' is required"):
        invoke("Cast", [np.ones(2)])
