"""The size limits (mx_ops.core._limits) and the parameter ranges built on them:
NumPy's own overflow rule is the reference for shapes, MXNet 1.9.1's
dmlc parameters (``int`` fields are C ints, TShape dims int64) for
parameters."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_engine import MXNetError
from mx_ops import invoke, registry
from mx_ops.core._limits import (INT32_MAX, INT64_MAX, MAX_BYTES, ArrayMemoryError, ShapeError,
                                 check_shape, shape_problem)
from mx_ops.core._params import Param, ParamError

ITEMSIZES = st.sampled_from([1, 2, 4, 8])
# Dims that stay within what NumPy accepts one by one.
DIMS = st.one_of(st.integers(0, 16), st.integers(0, INT64_MAX),
                 st.sampled_from([2 ** 31, 2 ** 32 - 1, 2 ** 40, 2 ** 62, 2 ** 63 - 1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(DIMS, min_size=1, max_size=6), ITEMSIZES)
def test_zero_size_shapes_follow_numpys_overflow_rule(dims, itemsize):
    # With a zero dim NumPy allocates nothing but still refuses a shape
    # whose other dims times the item size overflow intp: the same rule.
    shape = tuple(dims) + (0,)
    dtype = {1: np.int8, 2: np.float16, 4: np.float32, 8: np.float64}[itemsize]
    try:
        np.empty(shape, dtype)
        numpy_ok = True
    except ValueError:
        numpy_ok = False
    assert (shape_problem(shape, itemsize) is None) == numpy_ok


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(DIMS, st.integers(-2 ** 70, 2 ** 70), st.just(2 ** 64)),
                max_size=6), st.sampled_from([0, 1, 4, 8]))
def test_the_fast_check_agrees_with_the_explained_one(dims, itemsize):
    shape = tuple(dims)
    problem = shape_problem(shape, itemsize)
    if problem is None:
        check_shape(shape, "op: argument 'shape'", itemsize)
        return
    with pytest.raises((ShapeError, ArrayMemoryError)) as info:
        check_shape(shape, "op: argument 'shape'", itemsize)
    assert str(info.value) == f"op: argument 'shape' is {shape}: {problem}"
    assert isinstance(info.value, MXNetError)


@pytest.mark.parametrize("shape, itemsize, error, why", [
    ((-1,), 0, ShapeError, "dimension 0 is -1, a negative size"),
    ((2, 2.0), 0, ShapeError, "dimension 1 is 2.0, not an int"),
    ((True,), 0, ShapeError, "dimension 0 is True, not an int"),
    ((2 ** 63,), 0, ShapeError, "dimension 0 is 9223372036854775808 (2**63), more than int64's "
                                "limit 9223372036854775807 (2**63-1)"),
    ((2 ** 40, 2 ** 40), 0, ShapeError, "its non-zero dimensions multiply to "
                                        "1208925819614629174706176 (2**80) elements"),
    ((2 ** 62,), 4, ShapeError, "its non-zero dimensions would take 18446744073709551616 "
                                "(2**64) bytes, more than int64's limit"),
    ((2 ** 49,), 4, ArrayMemoryError, "it needs 2251799813685248 (2**51) bytes, more than any "
                                      "device holds (the limit is 1125899906842624 (2**50))"),
    ("abc", 0, ShapeError, "a shape is a tuple of ints, not str"),
])
def test_each_rule_says_what_and_the_limit(shape, itemsize, error, why):
    with pytest.raises(error) as info:
        check_shape(shape, "op: argument 'shape'", itemsize)
    assert why in str(info.value) and str(info.value).startswith("op: argument 'shape' is ")


def test_the_limits_themselves():
    assert shape_problem((INT64_MAX,)) is None and shape_problem((INT64_MAX, 0), 1) is None
    assert shape_problem((MAX_BYTES // 4,), 4) is None
    assert shape_problem((np.int64(3), np.uint8(2))) is None         # NumPy ints are ints
    # Zero-size shapes need no memory: only the overflow rule applies.
    assert shape_problem((2 ** 62, 0), 1) is None
    big = ArrayMemoryError("x")
    assert isinstance(big, MemoryError) and isinstance(big, MXNetError)


# -- parameters ---------------------------------------------------------------

def test_int_params_are_c_ints_as_in_mxnet():
    # MXNet 1.9.1 takes num_hidden=2**31-1 and refuses 2**31 ("Invalid
    # Parameter format for num_hidden expect int"); randint's bounds and
    # workspace are longs there, and here.
    p = Param("int")
    assert p.parse("op", "n", INT32_MAX) == INT32_MAX and p.parse("op", "n", -2 ** 31) == -2 ** 31
    for bad in (2 ** 31, -2 ** 31 - 1, "1" * 20):
        with pytest.raises(ParamError, match=r"op: argument 'n' must be in "
                                             r"\[-2147483648, 2147483647\]; got "):
            p.parse("op", "n", bad)
    randint = registry.get("_random_randint").params
    assert randint["high"].parse("op", "high", 2 ** 40) == 2 ** 40
    assert registry.get("Convolution").params["workspace"].parse("op", "w", 2 ** 40) == 2 ** 40


def test_shape_entries_are_int64():
    p = Param("shape")
    assert p.parse("op", "s", (INT64_MAX, -1)) == (INT64_MAX, -1)
    assert p.parse("op", "s", (np.int64(2), np.int32(3))) == (2, 3)
    with pytest.raises(ParamError, match=r"op: argument 's' entry 1 is 9223372036854775808, "
                                         r"outside the int64 range"):
        p.parse("op", "s", (1, 2 ** 63))
    with pytest.raises(ParamError, match=r"entry 0 is -9223372036854775809"):
        p.parse("op", "s", f"({-2 ** 63 - 1},)")
    with pytest.raises(ParamError, match=r"got '\(11111111.*\.\.\."):     # cut short
        p.parse("op", "s", "(" + "1" * 10_000 + ", x)")


def _bounded_params():
    """(op name, param name, Param) of every registered integer and shape
    parameter."""
    for name in registry.list_ops():
        op = registry.get(name)
        for key, spec in op.params.items():
            if spec.kind in ("int", "shape", "opt_shape"):
                yield name, key, spec


@pytest.mark.parametrize("bad", [2 ** 64, -2 ** 64, 1.5, "x", [2 ** 70]])
def test_every_int_and_shape_parameter_names_op_and_argument(bad):
    checked = 0
    for op, key, spec in _bounded_params():
        value = bad
        if spec.kind != "int" and not isinstance(bad, list):
            value = (1, bad)
        with pytest.raises(ParamError) as info:
            spec.parse(op, key, value)
        assert str(info.value).startswith(f"{op}: argument '{key}' ")
        checked += 1
    assert checked > 50


def test_numpy_invocations_check_outputs_before_numpy_does():
    with pytest.raises(ShapeError, match=r"^broadcast_to: output 0 is \(1099511627776, "
                                         r"1099511627776\) of float32: its non-zero dimensions"):
        invoke("broadcast_to", [np.ones((1, 1), np.float32)], shape=(2 ** 40, 2 ** 40))
    with pytest.raises(ShapeError, match=r"^_zeros: argument 'shape' is \(4611686018427387904,\) "
                                         r"of float32: its non-zero dimensions would take"):
        invoke("_zeros", [], shape=(2 ** 62,))


def test_arange_length_and_finite_bounds():
    with pytest.raises(ShapeError, match=r"^_arange: the length of range\(0.0, 1e\+20, 1.0\) "
                                         r"repeated 1 times is \(100000000000000000000,\): "
                                         r"dimension 0 is 100000000000000000000 \(about 2\*\*66\)"):
        invoke("_arange", [], start=0, stop=1e20)
    with pytest.raises(ParamError, match=r"^_arange: argument 'stop' must be finite, got inf"):
        invoke("_arange", [], start=0, stop=float("inf"))
    with pytest.raises(ParamError, match=r"^_arange: argument 'step' must be finite, got -inf"):
        invoke("_arange", [], start=0, stop=2, step=-float("inf"))
    with pytest.raises(ShapeError, match=r"repeated 4 times is \(18446744073709551616,\)"):
        invoke("_arange", [], start=0, stop=2.0 ** 62, repeat=4)
    with pytest.raises(ParamError, match=r"^_arange: argument 'repeat' must be in \[1, "):
        invoke("_arange", [], start=0, stop=4, repeat=2 ** 62)


def test_reshape_into_a_zero_size_shape_past_int64():
    with pytest.raises(ShapeError, match=r"^Reshape: the target shape is \(1099511627776, "
                                         r"1099511627776, 0\): its non-zero dimensions multiply"):
        invoke("Reshape", [np.ones((0,), np.float32)], shape=(2 ** 40, 2 ** 40, -1))
