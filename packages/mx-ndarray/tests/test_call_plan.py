"""The imperative call path's plan cache (mx_ops.core._call): a call that hits
the cache (parsed parameters, inference, packed parameters) gives what the
uncached path gives, results and errors alike; the cache stays bounded;
NDArray's scalar operators and basic row slices take their fast paths
without changing what they compute."""
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mx_ndarray as nd
from mx_ops.core import registry
from mx_ops.core._call import get_plan, plan_cache_info
from mx_ops.core._random_state import random_kind
from mx_ops.test_utils import plan_cache_limit, same_outcome
from mx_ops.core.registry import ShapeError


def _unary_ops():
    """Registered operators with one input, no required parameter, a CPU
    compute and no randomness: the property's population."""
    names = []
    for name in registry.list_ops():
        op = registry.get(name)
        if (name.startswith("_backward") or op.compute_ex or op.attr_parser is not None
                or random_kind(op) is not None or op.compute.get("cpu") is None):
            continue
        try:
            op.parse_call({}, 1)
        except Exception:
            continue
        names.append(name)
    return names


UNARY = _unary_ops()

# Candidate values per parameter name; a parameter the op lacks is dropped.
_PARAMS = {
    "axis": st.integers(-1, 0),
    "keepdims": st.booleans(),
    "scalar": st.sampled_from([0.5, 2.0, -1.5, 3]),
}


@st.composite
def unary_calls(draw):
    name = draw(st.sampled_from(UNARY))
    op = registry.get(name)
    params = {}
    for key, values in _PARAMS.items():
        if key in op.params and draw(st.booleans()):
            params[key] = draw(values)
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return name, params, shape


def _outcome(name, params, x):
    """The call's result as NumPy arrays, or its error as (type, message)."""
    try:
        out = nd.invoke(name, [nd.array(x)], **params)
        outs = out if isinstance(out, list) else [out]
        return [o.asnumpy() for o in outs]
    except Exception as exc:    # compared below: cached and uncached must agree
        return (type(exc), str(exc))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unary_calls(), st.integers(0, 2**31 - 1))
def test_cached_calls_equal_the_uncached_call(call, seed):
    name, params, shape = call
    x = np.random.default_rng(seed).uniform(0.1, 0.9, shape).astype(np.float32)
    with plan_cache_limit(0):
        expected = _outcome(name, params, x)         # parsed and inferred afresh
    with plan_cache_limit(64):
        first = _outcome(name, params, x)            # fills the plan and its inference
        again = _outcome(name, params, x)            # hits both
    assert same_outcome(first, expected), (name, params, shape)
    assert same_outcome(again, expected), (name, params, shape)


@pytest.mark.parametrize("lhs, rhs", [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((1,), (4,)),
                                      ((3, 1, 2), (1, 2))])
@pytest.mark.parametrize("op, ref", [("broadcast_add", np.add), ("broadcast_sub", np.subtract),
                                     ("broadcast_mul", np.multiply),
                                     ("broadcast_div", np.divide),
                                     ("broadcast_maximum", np.maximum)])
def test_binary_calls_against_numpy_cached_and_not(op, ref, lhs, rhs):
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 2, lhs).astype(np.float32)
    y = rng.uniform(1, 2, rhs).astype(np.float32)
    want = ref(x, y)
    for limit in (0, 64, 64):
        with plan_cache_limit(limit):
            got = nd.invoke(op, [nd.array(x), nd.array(y)]).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scalar_operators_against_numpy_with_changing_scalars():
    x = np.array([0.5, 1.5, -2.0], np.float32)
    a = nd.array(x)
    before = plan_cache_info()[0]
    for s in (0.25, 1, 2.5, -3, np.float32(1.5), True):
        np.testing.assert_allclose((a + s).asnumpy(), x + np.float32(s), rtol=1e-6)
        if not isinstance(s, np.generic):      # NumPy's own __sub__ takes those
            np.testing.assert_allclose((s - a).asnumpy(), np.float32(s) - x, rtol=1e-6)
        np.testing.assert_allclose((a * s).asnumpy(), x * np.float32(s), rtol=1e-6)
        np.testing.assert_array_equal((a > s).asnumpy(), (x > s).astype(np.float32))
        b = a.copy()
        b *= s
        np.testing.assert_allclose(b.asnumpy(), x * np.float32(s), rtol=1e-6)
    # One plan per scalar op, whatever the scalar: the cache does not grow
    # with a changing learning rate.
    for lr in np.linspace(0.01, 1, 200):
        a * float(lr)
    assert plan_cache_info()[0] <= before + 8


SCALAR_OPS = ["_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar",
              "_div_scalar", "_rdiv_scalar", "_mod_scalar", "_rmod_scalar", "_power_scalar",
              "_rpower_scalar", "_equal_scalar", "_not_equal_scalar", "_greater_scalar",
              "_greater_equal_scalar", "_lesser_scalar", "_lesser_equal_scalar"]


@pytest.mark.parametrize("name", SCALAR_OPS)
def test_scalar_ops_pack_one_double_and_infer_without_it(name):
    # What NDArray's operators rely on: the plan of scalar 0 with the
    # call's double as its parameter block is the call's own plan.
    for scalar in (0.0, 2.5, -7.0):
        plan = get_plan(name, 1, {"scalar": scalar})
        for dtype in ("float32", "float64", "int32", "uint8"):
            assert plan.packed_params([(2, 3)], [dtype]) == struct.pack("=d", scalar)
            assert (plan.infer_outputs([(2, 3)], [dtype])
                    == get_plan(name, 1, {"scalar": 0.0}).infer_outputs([(2, 3)], [dtype]))


def test_plan_cache_is_bounded():
    a = nd.array([1.0, 2.0])
    with plan_cache_limit(8):
        for i in range(100):
            out = nd.invoke("_mul_scalar", [a], scalar=i / 4)
            assert plan_cache_info()[0] <= 8
        np.testing.assert_allclose(out.asnumpy(), [99 / 4, 2 * 99 / 4])


def test_values_that_compare_equal_but_parse_differently_get_their_own_plans():
    i = nd.array([0, 1])
    assert nd.one_hot(i, depth=1).shape == (2, 1)
    with pytest.raises(Exception, match="must be an int, not bool"):
        nd.one_hot(i, depth=True)          # True == 1, but bool is refused
    assert nd.one_hot(i, depth=3.0).shape == (2, 3)


def test_unhashable_parameters_take_the_uncached_path():
    a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    want = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(nd.invoke("Reshape", [a], shape=[3, 2]).asnumpy(), want)
    np.testing.assert_array_equal(nd.invoke("Reshape", [a], shape=(3, 2)).asnumpy(), want)
    np.testing.assert_array_equal(
        nd.invoke("Reshape", [a], shape=np.array([3, 2])).asnumpy(), want)



@pytest.mark.parametrize("make", [list, lambda v: np.array(v)], ids=["list", "ndarray"])
def test_an_argument_changed_in_place_between_calls_is_parsed_again(make):
    # The same list (array) object passed again after a change in place must
    # not find the plan of its old contents.
    a = nd.ones((6,))
    shape = make([2, 3])
    assert nd.Reshape(a, shape=shape).shape == (2, 3)
    shape[0], shape[1] = 3, 2
    assert nd.Reshape(a, shape=shape).shape == (3, 2)
    assert nd.invoke("Reshape", [a], shape=shape).shape == (3, 2)

def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def test_errors_on_cache_hits_are_the_uncached_errors():
    x, w, b = nd.ones((4, 8)), nd.ones((3, 8)), nd.ones((3,))
    bad_w = nd.ones((3, 7))
    out = nd.zeros((4, 2))

    def calls():
        return [
            lambda: nd.FullyConnected(x, bad_w, b, num_hidden=3),
            lambda: nd.FullyConnected(x, w, b, num_hidden=3, out=out),
            lambda: nd.FullyConnected(x, np.ones((3, 8)), b, num_hidden=3),
            lambda: nd.relu(x, out=nd.zeros((4, 8), dtype="float64")),
            lambda: nd.invoke("relu", [x, x]),
            lambda: nd.invoke("relu", [x], no_such=1),
        ]

    with plan_cache_limit(0):
        expected = [_error(c) for c in calls()]
    with plan_cache_limit(64):
        nd.FullyConnected(x, w, b, num_hidden=3).wait_to_read()   # the plan, cached
        nd.relu(x).wait_to_read()
        for _ in range(2):
            assert [_error(c) for c in calls()] == expected
    assert expected[0][0] is ShapeError and "FullyConnected" in expected[0][1]
    assert "(3, 7)" in expected[0][1]
    assert "output 0 must be float32 of shape (4, 3)" in expected[1][1]
    assert "argument 'weight' must be an NDArray" in expected[2][1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3),
       st.one_of(st.none(), st.integers(-6, 6)), st.one_of(st.none(), st.integers(-6, 6)))
def test_row_slices_are_views_as_numpy_reads_them(shape, start, stop):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = nd.array(x)
    v = a[start:stop]
    np.testing.assert_array_equal(v.asnumpy(), x[start:stop])
    assert v.shape == x[start:stop].shape
    v[:] = -1                                   # a view: writes land in a
    x[start:stop] = -1
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_a_name_registered_anew_gets_a_new_plan():
    # Plans are found by name for calls without parameters: one made for
    # an operator that was unregistered must not serve its successor.
    def define(source):
        return registry.OpDef("_test_plan_reregistered", arguments=("data",),
                              infer_shape=lambda p, s: [s[0]], infer_type=lambda p, t: [t[0]],
                              compute={"cpu": registry.get(source).compute["cpu"]})

    x = nd.array([-1.0, 2.0])
    registry.register(define("negative"))
    try:
        np.testing.assert_array_equal(nd.invoke("_test_plan_reregistered", [x]).asnumpy(),
                                      [1.0, -2.0])
        registry._unregister("_test_plan_reregistered")
        registry.register(define("abs"))
        np.testing.assert_array_equal(nd.invoke("_test_plan_reregistered", [x]).asnumpy(),
                                      [1.0, 2.0])
    finally:
        registry._unregister("_test_plan_reregistered")
