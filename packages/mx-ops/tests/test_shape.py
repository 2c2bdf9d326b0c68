import itertools

import numpy as np
import pytest

from mx_ops import infer_shapes, infer_types, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.gradient import grad_entries
from mx_ops.core.node import evaluate, make_node, variable
from mx_ops.core.registry import ShapeError
from mx_ops.ops.shape.shape import reshape_shape

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


# The examples of MXNet's Reshape documentation.
@pytest.mark.parametrize("src, target, want", [
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)), ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)), ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)), ((2, 3, 4), (-2,), (2, 3, 4)), ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)), ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)), ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)), ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
])
def test_reshape_codes_follow_mxnet(src, target, want):
    assert reshape_shape(src, target) == want


def test_reshape_reverse():
    assert reshape_shape((10, 5, 4), (-1, 0), reverse=True) == (50, 4)
    assert reshape_shape((10, 5, 4), (-1, 0)) == (40, 5)


@pytest.mark.parametrize("target, text", [
    ((5, -1), "cannot infer -1"), ((-1, -1), "more than one -1"), ((7, 7), "cannot reshape"),
    ((-4, 5, 5, -2), "does not fit"), ((0, 0, 0, 0), "more dimensions than the input"),
    ((-9,), "one of the codes"),
])
def test_bad_reshapes(target, text):
    with pytest.raises(ShapeError, match=text):
        reshape_shape((2, 3, 4), target)
    with pytest.raises(ParamError, match="-4 with reverse"):
        reshape_shape((2, 3, 4), (-4, 1, 2, -2), reverse=True)


def test_shape_ops_keep_the_data():
    np.testing.assert_array_equal(invoke("Reshape", [X], shape="(4, 0, 2)"), X.reshape(4, 3, 2))
    np.testing.assert_array_equal(invoke("flatten", [X]), X.reshape(2, 12))
    np.testing.assert_array_equal(invoke("expand_dims", [X], axis=-1), X[..., None])
    assert invoke("expand_dims", [X], axis=0).shape == (1, 2, 3, 4)
    with pytest.raises(ShapeError, match="'axis' is 4, out of range"):
        invoke("expand_dims", [X], axis=4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "uint8", "int8", "int32",
                                   "int64"])
def test_transpose_every_permutation(dtype):
    x = X.astype(dtype)
    np.testing.assert_array_equal(invoke("transpose", [x]), x.T)
    for axes in itertools.permutations(range(3)):
        np.testing.assert_array_equal(invoke("transpose", [x], axes=axes), x.transpose(axes))
    np.testing.assert_array_equal(invoke("transpose", [x], axes=(-1, 0, 1)),
                                  x.transpose(2, 0, 1))
    y = np.arange(2 * 1 * 3 * 2 * 2, dtype=dtype).reshape(2, 1, 3, 2, 2)
    np.testing.assert_array_equal(invoke("transpose", [y], axes=(4, 2, 0, 3, 1)),
                                  y.transpose(4, 2, 0, 3, 1))
    assert invoke("transpose", [np.float32(3)]).shape == ()


def test_transpose_accumulates_and_checks_axes():
    out = np.ones((4, 3, 2), np.float32)
    invoke("transpose", [X], out=out, req="add")
    np.testing.assert_array_equal(out, X.T + 1)
    with pytest.raises(ShapeError, match="not a permutation of the 3 axes"):
        invoke("transpose", [X], axes=(0, 0, 1))


Y = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)


@pytest.mark.parametrize("begin, end, step", [
    ((1,), (3,), ()), ((0, 1), (4, 5), (2, 2)), ((None, None, 1), (None, None, None), ()),
    ((-1, 0), (0, 5), (-1, 1)), ((3, None, 5), (None, 0, 0), (-2, -1, -3)),
    ((0,), (0,), ()), ((2, 2, 2), (2, 2, 2), ()),
])
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "int64"])
def test_slice_matches_python_slicing(begin, end, step, dtype):
    y = Y.astype(dtype)
    key = tuple(slice(b, e, (step[i] if step else None)) for i, (b, e) in
                enumerate(zip(begin, end)))
    np.testing.assert_array_equal(invoke("slice", [y], begin=begin, end=end, step=step), y[key])
    np.testing.assert_array_equal(
        invoke("crop", [y], begin=str(begin).replace("None", "None"), end=str(end),
               step=str(step)), y[key])


def test_slice_axis_and_broadcast_to():
    np.testing.assert_array_equal(invoke("slice_axis", [Y], axis=1, begin=1, end=4), Y[:, 1:4])
    np.testing.assert_array_equal(invoke("slice_axis", [Y], axis=-1, begin=-2, end=None),
                                  Y[..., -2:])
    z = np.arange(3, dtype=np.float64).reshape(3, 1)
    np.testing.assert_array_equal(invoke("broadcast_to", [z], shape=(3, 4)),
                                  np.broadcast_to(z, (3, 4)))
    np.testing.assert_array_equal(invoke("broadcast_to", [z.reshape(1, 3, 1)], shape=(2, 0, 5)),
                                  np.broadcast_to(z.reshape(1, 3, 1), (2, 3, 5)))
    out = np.ones((3, 4))
    invoke("broadcast_to", [z], shape=(3, 4), out=out, req="add")
    np.testing.assert_array_equal(out, 1 + np.broadcast_to(z, (3, 4)))


@pytest.mark.parametrize("call, text", [
    (lambda: invoke("slice", [Y], begin=(0, 0), end=(1,)), "one entry per sliced axis"),
    (lambda: invoke("slice", [Y], begin=(0,), end=(1,), step=(0,)), "may not hold 0"),
    (lambda: invoke("slice_axis", [Y], axis=3, begin=0, end=1), "'axis' is 3, out of range"),
    (lambda: invoke("broadcast_to", [Y], shape=(4, 5)), "as many axes as 'data'"),
    (lambda: invoke("broadcast_to", [Y], shape=(4, 2, 6)), "does not broadcast to (4, 2, 6)"),
])
def test_slice_and_broadcast_errors(call, text):
    with pytest.raises(ShapeError) as info:
        call()
    assert text in str(info.value)


# --- shape_array and size_array: the shape (size) as int64, against NumPy ----------------
DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4), (1, 2, 1, 3, 1, 2, 1, 2)])
def test_shape_array_and_size_array(dtype, shape):
    x = np.zeros(shape, dtype)
    got = invoke("shape_array", [x])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.array(x.shape, np.int64))
    got = invoke("size_array", [x])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.array([x.size], np.int64))


def test_shape_array_accumulates_and_wraps():
    out = np.array([10, np.iinfo(np.int64).max], np.int64)
    invoke("shape_array", [np.ones((3, 2), np.int8)], out=out, req="add")
    np.testing.assert_array_equal(out, [13, np.iinfo(np.int64).min + 1])
    out = np.array([7], np.int64)
    invoke("size_array", [np.ones((3, 2))], out=out, req="add")
    np.testing.assert_array_equal(out, [13])


def test_shape_array_inference_and_gradient():
    assert infer_shapes("shape_array", {}, [(0, 3, 0)]) == ([(0, 3, 0)], [(3,)])
    assert infer_shapes("size_array", {}, [None]) == ([None], [(1,)])
    # The output is int64 whatever the data; the data's dtype is not guessed from it.
    assert infer_types("shape_array", {}, [None]) == ([None], ["int64"])
    assert infer_types("size_array", {}, ["float16"]) == (["float16"], ["int64"])
    for op in ("shape_array", "size_array"):
        node = make_node(op, [variable("x")])
        (g,) = grad_entries(node, [variable("g")])
        x = np.ones((2, 3), np.float32)
        (got,) = evaluate([g], {"x": x, "g": np.ones(2, np.int64)})
        np.testing.assert_array_equal(got, np.zeros_like(x))
