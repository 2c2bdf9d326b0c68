"""Impossible sizes: every creation function and every shape-typed
parameter refuses them with the project's error naming the operator, the
argument (or output), the value and the limit, before anything reaches C;
a size that is valid but larger than memory is a MemoryError naming the
request."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_engine import MXNetError
import mx_ndarray as nd
from mx_ndarray import random as ndrandom
from mx_ops.core._limits import INT64_MAX, ArrayMemoryError, ShapeError
from mx_ops.core._params import ParamError

LIMIT = r"more than int64's limit 9223372036854775807 \(2\*\*63-1\)"


# -- issue 12, finding 6: each call raised "Python int too large to convert to C long"

@pytest.mark.parametrize("call, message", [
    (lambda: nd.zeros((2 ** 40, 2 ** 40)),
     r"^_zeros: argument 'shape' is \(1099511627776, 1099511627776\) of float32: its non-zero "
     rf"dimensions multiply to 1208925819614629174706176 \(2\*\*80\) elements, {LIMIT}$"),
    (lambda: nd.zeros((2 ** 62,)),
     r"^_zeros: argument 'shape' is \(4611686018427387904,\) of float32: its non-zero "
     rf"dimensions would take 18446744073709551616 \(2\*\*64\) bytes, {LIMIT}$"),
    (lambda: nd.ones((2 ** 63 - 1,)),
     r"^_ones: argument 'shape' is \(9223372036854775807,\) of float32: .* would take "
     rf"36893488147419103228 \(about 2\*\*64\) bytes, {LIMIT}$"),
    (lambda: nd.empty((2 ** 64,)),
     r"^empty: argument 'shape' is \(18446744073709551616,\) of float32: dimension 0 is "
     rf"18446744073709551616 \(2\*\*64\), {LIMIT}$"),
    (lambda: nd.full((2 ** 62,), 1.0), r"^_full: argument 'shape' is \(4611686018427387904,\)"),
    (lambda: nd.op.broadcast_to(nd.zeros((1, 1)), shape=(2 ** 40, 2 ** 40)),
     r"^broadcast_to: output 0 is \(1099511627776, 1099511627776\) of float32: its non-zero "
     rf"dimensions multiply to .* elements, {LIMIT}$"),
    (lambda: nd.arange(0, 1e20),
     r"^_arange: the length of range\(0.0, 1e\+20, 1.0\) repeated 1 times is "
     rf"\(100000000000000000000,\): dimension 0 is 100000000000000000000 \(about 2\*\*66\), "
     rf"{LIMIT}$"),
    (lambda: nd.op.Convolution(nd.zeros((1, 1, 3, 3)), nd.zeros((1, 1, 1, 1)), kernel=(1, 1),
                               num_filter=1, no_bias=True, pad=(2 ** 30, 2 ** 30)),
     r"^Convolution: output 0 is \(1, 1, 2147483651, 2147483651\) of float32: its non-zero "
     rf"dimensions would take \d+ \(about 2\*\*64\) bytes, {LIMIT}$"),
    (lambda: ndrandom.uniform(shape=(2 ** 40, 2 ** 40)),
     r"^_random_uniform: argument 'shape' is \(1099511627776, 1099511627776\) of float32"),
    (lambda: ndrandom.normal(shape=(2 ** 62, 4), dtype="float64"),
     r"^_random_normal: argument 'shape' is \(4611686018427387904, 4\) of float64"),
    (lambda: ndrandom.randint(0, 10, shape=(2 ** 40, 2 ** 40), dtype="int64"),
     r"^_random_randint: argument 'shape' is \(1099511627776, 1099511627776\) of int64"),
    (lambda: nd.zeros((0,)).reshape((2 ** 40, 2 ** 40, -1)),
     r"^reshape: the target shape is \(1099511627776, 1099511627776, 0\)"),
])
def test_impossible_sizes_raise_shape_error_naming_op_value_and_limit(call, message):
    with pytest.raises(ShapeError, match=message) as info:
        call()
    assert isinstance(info.value, MXNetError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("call, message", [
    (lambda: ndrandom.normal(shape=(2 ** 63,)),
     r"^_random_normal: argument 'shape' entry 0 is 9223372036854775808, outside the int64 "
     r"range \[-9223372036854775808, 9223372036854775807\]"),
    (lambda: nd.op.Convolution(nd.zeros((1, 1, 3, 3)), nd.zeros((1, 1, 1, 1)), kernel=(1, 1),
                               num_filter=1, no_bias=True, pad=(2 ** 64, 0)),
     r"^Convolution: argument 'pad' entry 0 is 18446744073709551616, outside the int64"),
    (lambda: nd.op.FullyConnected(nd.zeros((1, 2)), nd.zeros((2, 2)), num_hidden=10 ** 19,
                                  no_bias=True),
     r"^FullyConnected: argument 'num_hidden' must be in \[1, 2147483647\]; "
     r"got 10000000000000000000$"),
    (lambda: nd.op.one_hot(nd.zeros((2,)), depth=2 ** 62),
     r"^one_hot: argument 'depth' must be in \[-2147483648, 2147483647\]"),
    (lambda: nd.zeros(None), r"^_zeros: argument 'shape' "),
])
def test_impossible_parameters_raise_param_error_naming_op_and_argument(call, message):
    with pytest.raises(ParamError, match=message) as info:
        call()
    assert isinstance(info.value, MXNetError) and isinstance(info.value, ValueError)


def test_valid_sizes_beyond_memory_are_memory_errors_naming_the_request():
    # Larger than any device: refused from its size.
    with pytest.raises(ArrayMemoryError, match=r"^_zeros: argument 'shape' is "
                                               r"\(562949953421312,\) of float32: it needs "
                                               r"2251799813685248 \(2\*\*51\) bytes, more than "
                                               r"any device holds"):
        nd.zeros((2 ** 49,))
    # Within the limit: the storage pool asks the system and reports the refusal.
    with pytest.raises(ArrayMemoryError, match=r"^_zeros: output 0 is \(140737488355328,\) of "
                                               r"float32 \(562949953421312 bytes\) on cpu\(0\): "
                                               r"storage.alloc: cannot allocate") as info:
        nd.zeros((2 ** 47,))
    assert isinstance(info.value, MemoryError) and isinstance(info.value, MXNetError)
    with pytest.raises(ArrayMemoryError, match=r"^empty: argument 'shape' is \(2251799813685248,"):
        nd.empty((2 ** 51,), dtype="uint8")


def test_zero_size_and_large_valid_shapes_still_work():
    a = nd.zeros((2 ** 40, 0, 2 ** 20))
    assert a.shape == (2 ** 40, 0, 2 ** 20) and a.asnumpy().shape == a.shape
    assert nd.empty((np.int64(2), np.uint8(3))).shape == (2, 3)
    assert nd.zeros((0,)).reshape((2 ** 40, -1)).shape == (2 ** 40, 0)
    c = nd.ones((3,)) + nd.ones((3,))
    np.testing.assert_array_equal(c.asnumpy(), [2, 2, 2])


# -- the property: random bad dims, every creation function ------------------

CREATORS = {
    "zeros": (lambda s: nd.zeros(s), "_zeros"),
    "ones": (lambda s: nd.ones(s), "_ones"),
    "empty": (lambda s: nd.empty(s), "empty"),
    "full": (lambda s: nd.full(s, 2.0), "_full"),
    "uniform": (lambda s: ndrandom.uniform(shape=s), "_random_uniform"),
    "normal": (lambda s: ndrandom.normal(shape=s), "_random_normal"),
    "randint": (lambda s: ndrandom.randint(0, 5, shape=s), "_random_randint"),
}
BAD_DIM = st.one_of(st.integers(-2 ** 70, -5),   # -1 .. -4 are Reshape's codes
                    st.integers(2 ** 63, 2 ** 80),
                    st.floats(allow_nan=True), st.sampled_from(["x", None, True, 2.5, [3]]))
OK_DIM = st.one_of(st.integers(1, 4), st.sampled_from([2 ** 31, 2 ** 40, 2 ** 62]))


def bad_shapes():
    """Tuples with one impossible dim, or valid dims whose product
    overflows int64."""
    one_bad = st.tuples(st.lists(OK_DIM, max_size=3), BAD_DIM, st.lists(OK_DIM, max_size=2)) \
        .map(lambda t: tuple(t[0]) + (t[1],) + tuple(t[2]))
    overflow = st.lists(st.sampled_from([2 ** 32, 2 ** 40, 2 ** 62]), min_size=2, max_size=4) \
        .map(tuple)
    return st.one_of(one_bad, overflow)


def assert_names(exc, op, arg=None):
    assert isinstance(exc, MXNetError), repr(exc)
    assert isinstance(exc, (ValueError, MemoryError)), repr(exc)
    text = str(exc)
    assert text.startswith(f"{op}: "), text
    assert arg is None or f"'{arg}'" in text or "output 0" in text, text


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(CREATORS)), bad_shapes())
def test_every_creation_function_refuses_bad_dims_naming_shape(which, shape):
    call, op = CREATORS[which]
    with pytest.raises(Exception) as info:
        call(shape)
    assert_names(info.value, op, "shape")


def conv_pad(pad):
    return nd.op.Convolution(nd.zeros((1, 1, 3, 3)), nd.zeros((1, 1, 1, 1)), kernel=(1, 1),
                             num_filter=1, no_bias=True, pad=pad)


def bad_pairs():
    """Two dims for a 2-d parameter: one impossible, or both so large that
    the output cannot be stored (never a valid size, which would allocate)."""
    small = st.integers(0, 4)
    return st.one_of(st.tuples(BAD_DIM, small), st.tuples(small, BAD_DIM),
                     st.tuples(st.sampled_from([2 ** 40, 2 ** 62]),
                               st.sampled_from([2 ** 40, 2 ** 62])))


# Shape-typed operator parameters: (call on a bad value, op, values).
SHAPE_PARAMS = {
    "broadcast_to": (lambda s: nd.op.broadcast_to(nd.zeros((1,) * len(s)), shape=s),
                     "broadcast_to", bad_shapes()),
    "Reshape": (lambda s: nd.op.Reshape(nd.zeros((2,)), shape=s), "Reshape", bad_shapes()),
    "Convolution pad": (conv_pad, "Convolution", bad_pairs()),
    "Pooling kernel": (lambda s: nd.op.Pooling(nd.zeros((1, 1, 3, 3)), kernel=s), "Pooling",
                       bad_pairs()),
}


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_shape_typed_parameters_refuse_bad_dims_naming_the_op(data):
    call, op, values = SHAPE_PARAMS[data.draw(st.sampled_from(sorted(SHAPE_PARAMS)))]
    value = data.draw(values)
    with pytest.raises(Exception) as info:
        call(value)
    assert_names(info.value, op)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, INT64_MAX), min_size=1, max_size=4))
def test_empty_refuses_exactly_what_the_limits_refuse(dims):
    # A zero dim keeps the allocation empty, so every verdict can be tried.
    shape = tuple(dims) + (0,)
    try:
        np.empty(shape, np.float32)
        expect_ok = True
    except ValueError:
        expect_ok = False
    if expect_ok:
        assert nd.empty(shape).shape == shape
    else:
        with pytest.raises(ShapeError, match=r"^empty: argument 'shape' is "):
            nd.empty(shape)
