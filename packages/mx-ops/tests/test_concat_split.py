"""Concat and SliceChannel against NumPy, and the variadic registry API."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
SHAPES = [(5,), (2, 3), (2, 3, 4), (2, 1, 3, 2), (1, 2, 2, 3, 2)]
rng = np.random.default_rng(0)


def data(shape, dtype):
    return (rng.uniform(-50, 50, shape) if dtype[0] != "u" else
            rng.uniform(0, 100, shape)).astype(dtype)


def test_variadic_registry_api():
    concat, split = get("Concat"), get("split")
    assert concat.variadic and concat.key_var_num_args == "num_args"
    assert concat.num_inputs is None and concat.num_outputs == 1
    params = concat.parse_call({"dim": 0}, 3)
    assert params == {"num_args": 3, "dim": 0}
    assert concat.input_names(params) == ["arg0", "arg1", "arg2"]
    assert concat.input_count(params) == 3 and concat.output_count(params) == 1
    assert not split.variadic and split.num_inputs == 1 and split.num_outputs is None
    p = split.parse_call({"num_outputs": "3"}, 1)
    assert split.output_names(p) == ["output0", "output1", "output2"]
    assert split.output_count(p) == 3 and split.input_names(p) == ["data"]
    assert "data : NDArray[]" in concat.docstring()
    assert "list of NDArray" in split.docstring()
    # Fixed-arity operators keep their attributes.
    assert get("exp").num_inputs == 1 and get("exp").input_names({}) == ["data"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_concat_every_axis(dtype, shape):
    for axis in range(-len(shape), len(shape)):
        parts = []
        for k in (1, 3, 2):
            s = list(shape)
            s[axis] = k
            parts.append(data(s, dtype))
        want = np.concatenate(parts, axis=axis)
        got = invoke("Concat", parts, dim=axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        out = data(want.shape, dtype)
        start = out.copy()
        invoke("concat", parts, out=out, req="add", dim=axis, num_args=3)
        np.testing.assert_array_equal(out, (start + want).astype(dtype))
        invoke("concat", parts, out=out, req="null", dim=axis)
        np.testing.assert_array_equal(out, (start + want).astype(dtype))


def test_concat_default_dim_single_input_and_zero_size():
    a, b = data((2, 3), "float32"), data((2, 4), "float32")
    np.testing.assert_array_equal(invoke("Concat", [a, b]), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(invoke("Concat", [a]), a)
    z = np.zeros((2, 0), np.float32)
    np.testing.assert_array_equal(invoke("Concat", [z, a, z]), a)
    assert invoke("Concat", [np.zeros((0, 3)), np.zeros((0, 4))]).shape == (0, 7)


@pytest.mark.parametrize("call, err, text", [
    (lambda: invoke("Concat", [np.ones((2, 3)), np.ones((3, 3))], dim=1), ShapeError,
     "Concat: argument 'arg1' has shape (3, 3), which differs from 'arg0' (2, 3) on an axis "
     "other than dim=1"),
    (lambda: invoke("Concat", [np.ones((2, 3)), np.ones((2, 3, 1))], dim=0), ShapeError,
     "'arg1' has shape (2, 3, 1)"),
    (lambda: invoke("Concat", [np.ones((2, 3))], dim=2), ShapeError,
     "Concat: argument 'dim' is 2, out of range for 'arg0' of shape (2, 3)"),
    (lambda: invoke("Concat", [np.ones(2), np.ones(2, np.int32)], dim=0), TypeInferenceError,
     "Concat: argument 'arg1' has dtype int32, which differs from 'arg0' float64"),
    (lambda: invoke("Concat", [np.ones(2), np.ones(2)], num_args=3, dim=0), ParamError,
     "Concat: argument 'num_args' is 3, but 2 input(s) were given"),
    (lambda: invoke("Concat", [], dim=0), ParamError, "'num_args' must be in [1, 1048576]"),
])
def test_concat_errors(call, err, text):
    with pytest.raises(err) as info:
        call()
    assert text in str(info.value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6,), (2, 6), (3, 6, 2), (2, 3, 2, 6), (2, 1, 2, 3, 6)])
def test_split_every_axis(dtype, shape):
    x = data(shape, dtype)
    for axis in range(-len(shape), len(shape)):
        for n in (1, shape[axis]):
            want = np.split(x, n, axis=axis)
            got = invoke("SliceChannel", [x], num_outputs=n, axis=axis)
            got = [got] if n == 1 else got
            assert len(got) == n
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
            sq = invoke("split", [x], num_outputs=shape[axis], axis=axis, squeeze_axis=True)
            sq = sq if isinstance(sq, list) else [sq]
            for g, w in zip(sq, np.split(x, shape[axis], axis=axis)):
                np.testing.assert_array_equal(g, np.squeeze(w, axis=axis))


def test_split_honours_req_per_output():
    x = data((4, 6), "float32")
    outs = [np.ones((4, 2), np.float32) for _ in range(3)]
    invoke("split", [x], out=outs, req=["add", "null", "write"], num_outputs=3)
    want = np.split(x, 3, axis=1)
    np.testing.assert_array_equal(outs[0], want[0] + 1)
    np.testing.assert_array_equal(outs[1], np.ones((4, 2)))
    np.testing.assert_array_equal(outs[2], want[2])
    with pytest.raises(ValueError, match="'req' must hold 3 value"):
        invoke("split", [x], out=outs, req=["add"], num_outputs=3)


def test_split_zero_size():
    parts = invoke("split", [np.zeros((0, 4), np.int8)], num_outputs=2)
    assert [p.shape for p in parts] == [(0, 2), (0, 2)]
    parts = invoke("split", [np.zeros((4, 0), np.int8)], num_outputs=2, axis=0)
    assert [p.shape for p in parts] == [(2, 0), (2, 0)]


@pytest.mark.parametrize("kwargs, text", [
    (dict(num_outputs=4), "SliceChannel: axis 1 of 'data' (2, 6) has size 6, which "
                          "num_outputs=4 does not divide"),
    (dict(num_outputs=3, squeeze_axis=True), "squeeze_axis=True needs axis 1 of 'data' (2, 6) "
                                             "to have size num_outputs=3"),
    (dict(num_outputs=2, axis=2), "SliceChannel: argument 'axis' is 2, out of range for "
                                  "'data' of shape (2, 6)"),
])
def test_split_errors(kwargs, text):
    with pytest.raises(ShapeError) as info:
        invoke("SliceChannel", [np.ones((2, 6))], **kwargs)
    assert text in str(info.value)
    with pytest.raises(ParamError, match="SliceChannel: argument 'num_outputs' is required"):
        invoke("SliceChannel", [np.ones((2, 6))])
