"""mx_ops.invoke through the call plan cache (mx_ops.core._call): calls that hit
it give what the uncached path gives, results and errors alike, over the
registry's one-input operators with random shapes and parameters; random
operators still draw in call order."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import mx_ops
from mx_ops.core import registry
from mx_ops.core._call import get_plan, plan_cache_info
from mx_ops.core._random_state import random_kind
from mx_ops.test_utils import plan_cache_limit, same_outcome


UNARY = [name for name in registry.list_ops()
         if not name.startswith("_backward") and not registry.get(name).compute_ex
         and registry.get(name).attr_parser is None
         and random_kind(registry.get(name)) is None
         and registry.get(name).compute.get("cpu") is not None]

_PARAMS = {"axis": st.integers(-2, 1), "keepdims": st.booleans(),
           "scalar": st.sampled_from([0.5, 2.0, -1.5, 3]), "act_type": st.sampled_from(
               ["relu", "tanh", "sigmoid", "softrelu", "nope"])}


@st.composite
def calls(draw):
    name = draw(st.sampled_from(UNARY))
    op = registry.get(name)
    params = {k: draw(v) for k, v in _PARAMS.items() if k in op.params and draw(st.booleans())}
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return name, params, shape


def _outcome(name, params, x):
    try:
        out = mx_ops.invoke(name, [x], **params)
    except Exception as exc:    # compared: cached and uncached must agree
        return (type(exc), str(exc))
    return [np.array(o) for o in (out if isinstance(out, list) else [out])]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls(), st.integers(0, 2**31 - 1))
def test_cached_calls_equal_the_uncached_call(call, seed):
    name, params, shape = call
    x = np.random.default_rng(seed).uniform(0.1, 0.9, shape).astype(np.float32)
    with plan_cache_limit(0):
        expected = _outcome(name, params, x)
    with plan_cache_limit(64):
        assert same_outcome(_outcome(name, params, x), expected), call
        assert same_outcome(_outcome(name, params, x), expected), call


def test_plans_are_cached_per_signature_and_bounded():
    with plan_cache_limit(4):
        p = get_plan("FullyConnected", 3, {"num_hidden": 3})
        assert get_plan("FullyConnected", 3, {"num_hidden": 3}) is p
        assert get_plan("FullyConnected", 3, {"num_hidden": 3.0}) is not p
        assert get_plan("FullyConnected", 2, {"num_hidden": 3, "no_bias": True}) is not p
        for i in range(20):
            get_plan("_plus_scalar", 1, {"scalar": float(i)})
            assert plan_cache_info()[0] <= 4
    with plan_cache_limit(0):
        assert get_plan("relu", 1, {}) is not get_plan("relu", 1, {})


def test_random_ops_draw_in_call_order_on_cache_hits():
    # Two calls with one cached plan still reserve their own draws.
    shape = (1000,)
    a = mx_ops.invoke("_random_uniform", [], shape=shape)
    b = mx_ops.invoke("_random_uniform", [], shape=shape)
    assert not np.array_equal(a, b)


def _parsed(op, nin, params):
    try:
        return get_plan(op, nin, params).params
    except Exception as exc:    # compared: the shortcut and the uncached parse must agree
        return (type(exc), str(exc))


# Arguments that compare equal (or nearly) but differ in type, order or keys,
# called in turn: plan_for compares each call's arguments with the op's last
# ones before building a key, and must never take one for the other.
_ARGUMENT_RUNS = [
    ("one_hot", 1, [{"depth": 3}, {"depth": True}, {"depth": 3}, {"depth": 3.0},
                    {"depth": 1}, {"depth": True}, {"depth": "3"}, {"depth": 3}]),
    ("Reshape", 1, [{"shape": (3, 2)}, {"shape": (3.0, 2)}, {"shape": (3, 2)},
                    {"shape": [3, 2]}, {"shape": (3, 2, 1)}, {"shape": (True, 2)},
                    {"shape": (3, 2)}, {"shape": np.array([3, 2])}, {"shape": (3, 2)}]),
    ("FullyConnected", 3, [{"num_hidden": 3}, {"num_hidden": 3, "no_bias": False},
                           {"num_hidden": 3}, {"num_hidden": 4}, {"num_hidden": None},
                           {"num_hidden": 3, "flatten": False}, {"flatten": False},
                           {"num_hidden": 3}]),
    ("Pooling", 1, [{"kernel": (2, 2), "pool_type": "max"}, {"kernel": (2, 2)},
                    {"pool_type": "max", "kernel": (2, 2)}, {"kernel": (2, 2), "pool_type": "avg"},
                    {"kernel": (2, 2), "pool_type": "max", "stride": (1, 1)},
                    {"kernel": (2, 2), "pool_type": "max"}]),
]


def test_last_arguments_shortcut_parses_as_the_uncached_path():
    for op, nin, runs in _ARGUMENT_RUNS:
        with plan_cache_limit(0):
            want = [_parsed(op, nin, p) for p in runs]
        with plan_cache_limit(64):
            for _ in range(2):
                assert [_parsed(op, nin, p) for p in runs] == want, op
