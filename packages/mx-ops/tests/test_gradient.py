"""Gradient makers against central finite differences in float64, the
node evaluator, and backward dependencies."""
import json
import subprocess
import sys

import numpy as np
import pytest

from mx_ops import registry
from mx_ops.core.gradient import backward_dependency, grad_entries, set_gradient
from mx_ops.core.node import evaluate, make_node, variable
from mx_ops.ops.elemwise.grad import BINARY, SCALAR, UNARY
from mx_ops.test_utils import check_numeric_gradient

RNG = np.random.default_rng(17)
# Inputs inside every function's smooth domain (log, sqrt, arctanh, ...),
# away from the kinks of abs and relu.
POSITIVE = RNG.uniform(0.3, 0.9, (3, 4))
MIXED = RNG.uniform(0.3, 0.9, (3, 4)) * RNG.choice([-1, 1], (3, 4))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients(name):
    x = MIXED if name in ("abs", "relu", "negative", "square", "sign", "_copy", "erf") else POSITIVE
    if name == "arccosh":
        x = POSITIVE + 1.0
    check_numeric_gradient(name, [x])


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_gradients(name):
    check_numeric_gradient(name, [POSITIVE], scalar=1.7)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradients(name):
    # a power's base stays positive (log of it in the exponent's gradient)
    inputs = [POSITIVE, MIXED] if BINARY[name][0] == "power" else [MIXED, POSITIVE]
    check_numeric_gradient(name, inputs)


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True),
                                    (True, True)])
def test_dot_gradients(ta, tb):
    a = RNG.uniform(-1, 1, (3, 4) if ta else (4, 3))
    b = RNG.uniform(-1, 1, (5, 3) if tb else (3, 5))
    check_numeric_gradient("dot", [a, b], transpose_a=ta, transpose_b=tb)


def test_transpose_gradients():
    x = RNG.uniform(-1, 1, (2, 3, 4))
    check_numeric_gradient("transpose", [x])
    check_numeric_gradient("transpose", [x], axes=(1, 2, 0))


def test_every_differentiable_operator_has_a_gradient_maker():
    """``_backward_*`` ops may go without one: second-order gradients through
    them are not offered.  Read in a fresh process: other tests register
    operators of their own (custom-op libraries) into this one."""
    script = ("import json; from mx_ops import registry; print(json.dumps("
              "[n for n in registry.list_ops() if registry.get(n).differentiable"
              " and registry.get(n).gradient is None and not n.startswith('_backward_')]))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    missing = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not missing, (f"differentiable operators without a gradient maker: {missing}; "
                         f"register one (mx_ops.core.gradient.set_gradient) or pass "
                         f"differentiable=False")


def test_evaluate_runs_each_node_once_and_names_missing_feeds():
    x = variable("x")
    y = make_node("exp", [x])
    z = make_node("elemwise_add", [y, y])
    (got,) = evaluate(z.outputs(), {"x": np.zeros(3)})
    np.testing.assert_array_equal(got, [2, 2, 2])
    with pytest.raises(KeyError, match="no value fed for variable 'x'"):
        evaluate(z.outputs(), {})


def test_backward_dependency_reads_off_the_maker():
    def deps(name, n_in=1, **params):
        node = make_node(name, [variable(f"v{i}") for i in range(n_in)], **params)
        ograds = [variable("g").outputs()[0]]
        return backward_dependency(node, ograds, grad_entries(node, ograds))

    assert deps("exp") == {"out_grad", "out_data"}
    assert deps("log") == {"out_grad", "in_data"}
    assert deps("negative") == {"out_grad"}
    assert deps("elemwise_mul", 2) == {"out_grad", "in_data"}
    assert deps("sign") == {"in_data"}          # zeros_like reads only the shape


def test_missing_and_refused_gradients_are_clear_errors():
    registry.register(registry.OpDef(
        "_test_no_maker", arguments=("data",), infer_shape=lambda p, s: [s[0]],
        infer_type=lambda p, t: [t[0]], compute={}))
    try:
        node = make_node("_test_no_maker", [variable("x")])
        with pytest.raises(registry.OperatorNotFound,
                           match="_test_no_maker: no gradient is registered"):
            grad_entries(node, [variable("g").outputs()[0]])
    finally:
        registry._unregister("_test_no_maker")
    with pytest.raises(registry.MXNetError, match="_full: registered as not differentiable"):
        set_gradient("_full", lambda node, ograds: [])
    assert grad_entries(make_node("_full", [], shape=(2,)), [variable("g")]) == []


@pytest.mark.parametrize("no_bias, flatten", [(False, True), (True, True), (False, False)])
def test_fully_connected_gradient(no_bias, flatten):
    x = RNG.uniform(-1, 1, (2, 3, 4))
    w = RNG.uniform(-1, 1, (5, 12 if flatten else 4))
    inputs = [x, w] if no_bias else [x, w, RNG.uniform(-1, 1, 5)]
    check_numeric_gradient("FullyConnected", inputs, num_hidden=5, no_bias=no_bias,
                           flatten=flatten)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_gradient(act):
    check_numeric_gradient("Activation", [MIXED], act_type=act)


# selu's is MXNet's lambda * (alpha + y) below 0, not the derivative, and
# gelu's runs in float32: test_math_ops.py checks both against MXNet's outputs.
@pytest.mark.parametrize("act", ["leaky", "elu", "prelu"])
def test_leaky_relu_gradient(act):
    inputs = [MIXED, RNG.uniform(0.1, 0.5, (4,))] if act == "prelu" else [MIXED]
    check_numeric_gradient("LeakyReLU", inputs, act_type=act, slope=0.3)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_gradients(name):
    check_numeric_gradient(name, [MIXED], axis=0, temperature=1.5)
    check_numeric_gradient(name, [MIXED])


@pytest.mark.parametrize("pool", ["max", "avg", "sum"])
def test_pooling_gradient(pool):
    x = RNG.permutation(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) / 50.0     # no ties for max
    check_numeric_gradient("Pooling", [x], pool_type=pool, kernel=(3, 3), stride=(2, 2),
                           pad=(1, 1))


def test_backward_dependency_of_legacy_backward_nodes():
    node = make_node("Activation", [variable("x")], act_type="relu")
    ograds = [variable("g").outputs()[0]]
    assert backward_dependency(node, ograds, grad_entries(node, ograds)) == {"out_grad",
                                                                            "out_data"}
    node = make_node("FullyConnected", [variable("x"), variable("w"), variable("b")],
                     num_hidden=3)
    grads = grad_entries(node, ograds)
    assert len(grads) == 3 and backward_dependency(node, ograds, grads) == {"out_grad",
                                                                             "in_data"}


@pytest.mark.parametrize("op, no_bias, extra", [
    ("Convolution", False, {"stride": (2, 1), "pad": (1, 0), "num_group": 2}),
    ("Convolution", True, {"dilate": (1, 2)}),
    ("Deconvolution", False, {"stride": (2, 2), "adj": (1, 0)}),
])
def test_convolution_gradients(op, no_bias, extra):
    x = RNG.uniform(-1, 1, (2, 4, 5, 6))
    groups = extra.get("num_group", 1)
    w = RNG.uniform(-1, 1, (4, 4 // groups, 3, 3) if op == "Convolution" else (4, 2, 3, 3))
    inputs = [x, w] if no_bias else [x, w, RNG.uniform(-1, 1, 4 if op == "Convolution" else 2)]
    check_numeric_gradient(op, inputs, kernel=(3, 3), num_filter=4 if op == "Convolution" else 2,
                           no_bias=no_bias, **extra)
