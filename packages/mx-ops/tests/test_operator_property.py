"""Operators registered in the OperatorProperty style with Python
Operators (mx_ops.ext.operator): forward against NumPy under every req,
gradients by finite differences through the generated _backward_<name>,
backward dependencies, in-place options, hidden outputs and aux states,
resources (temp space, random), the training flag, and registrations
that must fail with a clear error.  Each test registers its own operator
and removes it afterwards."""
import math

import numpy as np
import pytest

import mx_ops
from mx_ops import invoke, registry
from mx_ops.core import gradient, training
from mx_ops.core._params import Param
from mx_ops.core.node import make_node, variable
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext.operator import (Operator, OperatorProperty, OperatorPropertyError,
                                 register_op_property)
from mx_ops.test_utils import check_numeric_gradient
from mx_storage.resource import ResourceRequest


@pytest.fixture
def reg():
    """register_op_property, undone after the test."""
    names = []

    def add(name, cls, **kw):
        op = register_op_property(name, cls, **kw)
        names.append(name)
        return op
    yield add
    for name in names:
        registry._unregister(name)
        registry._unregister(f"_backward_{name}")


# --- an elementwise op: y = k * x^2 -----------------------------------------------------
class ScaledSquare(Operator):
    def __init__(self, k):
        self.k = k

    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        self.assign(out_data[0], req[0], self.k * in_data[0] ** 2)

    def backward(self, op_ctx, out_grad, in_data, out_data, req, in_grad, aux_states):
        assert out_data[0] is None          # not declared: not kept
        self.assign(in_grad[0], req[0], 2 * self.k * in_data[0] * out_grad[0])


class ScaledSquareProp(OperatorProperty):
    """k * data^2, elementwise."""
    params = {"k": Param("float", 1.0, doc="The factor.")}
    seen = []

    def infer_shape(self, in_shapes):
        return in_shapes, [in_shapes[0]], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0]]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        return [(out_grad[0], in_grad[0])]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        self.seen.append((ctx, in_shapes, in_dtypes))
        return ScaledSquare(self.param.k)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_python_operator_against_numpy_under_every_req(reg, nn, dtype):
    reg("_t_sqr", ScaledSquareProp)
    x = np.random.default_rng(0).uniform(-2, 2, (3, 4)).astype(dtype)
    nn.check_reqs("_t_sqr", [x], [3.0 * x.astype(np.float64) ** 2], {"k": 3.0}, dtype)
    ctx, shapes, dtypes = ScaledSquareProp.seen[-1]
    assert (str(ctx), shapes, dtypes) == ("cpu(0)", [(3, 4)], [dtype])


def test_gradient_backward_dependency_and_inplace(reg):
    fwd = reg("_t_sqr", ScaledSquareProp)
    bwd = registry.get("_backward__t_sqr")
    x = np.random.default_rng(1).uniform(-2, 2, (2, 5))
    check_numeric_gradient("_t_sqr", [x], k=2.5)
    # What the backward reads is what the property declared: out_data is
    # not among it, so the forward's output may be freed early.
    node = make_node("_t_sqr", [variable("x")], k=2.0)
    og = variable("og").outputs()[0]
    grads = gradient.grad_entries(node, [og])
    assert gradient.backward_dependency(node, [og], grads) == {"out_grad", "in_data"}
    assert grads[0].node.op is bwd and bwd.input_names(node.params) == ["output_grad", "data"]
    # the in-place options reach the registry: backward input 0 -> output 0
    assert fwd.inplace == () and bwd.inplace == ((0, 0),)
    g = np.ones((2, 5))
    invoke("_backward__t_sqr", [g, x], out=g, req="inplace", k=2.0)
    np.testing.assert_allclose(g, 4.0 * x)


# --- hidden outputs, aux states and the training flag ---------------------------------
class Center(Operator):
    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        x, moving = in_data[0], aux_states[0]
        mean = x.mean(axis=0)
        if op_ctx.is_train:
            moving *= 0.5
            moving += 0.5 * mean
        else:
            mean = moving
        self.assign(out_data[1], req[1], mean)
        self.assign(out_data[0], req[0], x - mean)

    def backward(self, op_ctx, out_grad, in_data, out_data, req, in_grad, aux_states):
        g = out_grad[0]
        self.assign(in_grad[0], req[0], g - g.mean(axis=0))


class CenterProp(OperatorProperty):
    """Subtracts the batch mean in training and a moving mean otherwise."""

    def list_outputs(self):
        return ["output", "mean"]

    def list_auxiliary_states(self):
        return ["moving_mean"]

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        return [s], [s, s[1:]], [s[1:]]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        return [(out_grad[0], in_grad[0])]     # and so the data gradient's shape

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Center()


def test_hidden_outputs_aux_states_and_training_flag(reg):
    op = reg("_t_center", CenterProp)
    assert op.aux_states == ("moving_mean",) and op.mutated_inputs({}) == (1,)
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    moving = np.zeros(3)
    with training.train_mode():
        y, mean = invoke("_t_center", [x, moving])
    np.testing.assert_allclose(y, x - x.mean(0))
    np.testing.assert_allclose(moving, 0.5 * x.mean(0))       # updated in place
    y, mean = invoke("_t_center", [x, moving])                  # inference: moving mean
    np.testing.assert_allclose(y, x - moving)
    # The gradient treats the hidden output as no output, the aux state as
    # no argument.
    with training.train_mode():
        check_numeric_gradient("_t_center", [x, np.zeros(3)])
    node = make_node("_t_center", [variable("x"), variable("m")])
    grads = gradient.grad_entries(node, [variable("g").outputs()[0], variable("h").outputs()[0]])
    assert grads[1] is None
    assert grads[0].node.op.name == "_backward__t_center"


# --- resources --------------------------------------------------------------------------
class Noisy(Operator):
    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        temp, rnd = op_ctx.requested
        buf = temp.get_space(in_data[0].shape, in_data[0].dtype)
        buf[...] = in_data[0] * 2                  # scratch work in the temp space
        noise = rnd.uniform(0, 1, in_data[0].shape, in_data[0].dtype)
        self.assign(out_data[0], req[0], buf + noise)
        if in_data[0].size == 1:                   # a draw beyond the reservation
            rnd.normal(0, 1, (2,))


class NoisyProp(OperatorProperty):
    def infer_shape(self, in_shapes):
        return in_shapes, [in_shapes[0]], []

    def forward_resource(self, in_shapes):
        return [ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM]

    def forward_workspace(self, in_shapes):
        return 8 * math.prod(in_shapes[0])

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Noisy()


def test_temp_space_and_random_resources(reg):
    from mx_engine import cpu
    from mx_storage import _philox, resource
    op = reg("_t_noisy", NoisyProp)
    assert op.resources == (ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM)
    assert op.workspace({}, [(3, 4)]) == 96 and op.random_draws({}, [(3, 4)]) == 12
    x = np.ones((3, 4), np.float32)
    state = resource.request(cpu(0), ResourceRequest.RANDOM)
    seed, offset = state.seed, state.offset
    y = invoke("_t_noisy", [x])
    want = 2 + _philox.uniform(seed, offset, 12, 0.0, 1.0, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(y, want)
    z = invoke("_t_noisy", [x])                      # the next call draws the next values
    assert not np.array_equal(y, z) and ((z >= 2) & (z < 3)).all()
    with pytest.raises(Exception, match="_t_noisy: draws 3 random numbers in one call, but "
                                        "its random_draws reserved 1"):
        invoke("_t_noisy", [np.ones(1, np.float32)])


def test_get_space_beyond_the_workspace_is_a_clear_error(reg):
    class Greedy(Noisy):
        def forward(self, op_ctx, in_data, req, out_data, aux_states):
            op_ctx.requested[0].get_space((100,), "float64")

    class GreedyProp(NoisyProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Greedy()

    reg("_t_greedy", GreedyProp)
    with pytest.raises(Exception, match=r"_t_greedy: get_space\(\(100,\), float64\) needs 800 "
                                        r"bytes, but the operator's workspace function granted "
                                        r"96"):
        invoke("_t_greedy", [np.ones((3, 4), np.float32)])


# --- backward shapes without the input ------------------------------------------------
class Double(Operator):
    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        self.assign(out_data[0], req[0], 2 * in_data[0])

    def backward(self, op_ctx, out_grad, in_data, out_data, req, in_grad, aux_states):
        assert in_data[0] is None and out_data[0] is None
        self.assign(in_grad[0], req[0], 2 * out_grad[0])


class DoubleProp(OperatorProperty):
    def infer_shape(self, in_shapes):
        return in_shapes, [in_shapes[0]], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def forward_inplace_option(self, in_data, out_data):
        return [(in_data[0], out_data[0])]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Double()


def test_backward_shape_from_an_inplace_pair(reg):
    op = reg("_t_double", DoubleProp)
    assert op.inplace == ((0, 0),)
    x = np.random.default_rng(2).standard_normal((3, 2))
    check_numeric_gradient("_t_double", [x])
    invoke("_t_double", [x], out=x, req="inplace")     # the forward's in-place option
    assert registry.get("_backward__t_double").infer_shape({}, [(3, 2)]) == [(3, 2)]


def test_backward_shape_that_nothing_gives_is_a_clear_error(reg):
    class Sum(Operator):
        def forward(self, op_ctx, in_data, req, out_data, aux_states):
            self.assign(out_data[0], req[0], in_data[0].sum(axis=0))

    class SumProp(DoubleProp):
        def infer_shape(self, in_shapes):
            return in_shapes, [tuple(in_shapes[0][1:])], []

        def forward_inplace_option(self, in_data, out_data):
            return []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Sum()

    reg("_t_sum0", SumProp)
    with pytest.raises(ShapeError, match="_backward__t_sum0: cannot infer the shape of the "
                                         "gradient of 'data'"):
        invoke("_backward__t_sum0", [np.ones(3)])


# --- inference errors -------------------------------------------------------------------
def test_type_and_shape_errors_name_the_operator(reg):
    class TwoProp(ScaledSquareProp):
        def list_arguments(self):
            return ["a", "b"]

        def infer_shape(self, in_shapes):
            if in_shapes[0] != in_shapes[1]:
                raise ShapeError(f"argument 'b' has shape {in_shapes[1]}, which differs from "
                                 f"'a' {in_shapes[0]}")
            return in_shapes, [in_shapes[0]], []

    reg("_t_two", TwoProp)
    with pytest.raises(TypeInferenceError, match="_t_two: argument 'b' has dtype float32, "
                                                 "which differs from 'a' float64"):
        invoke("_t_two", [np.ones(2), np.ones(2, np.float32)])
    with pytest.raises(ShapeError, match="argument 'b' has shape"):
        invoke("_t_two", [np.ones(2), np.ones(3)])
    with pytest.raises(mx_ops.core._params.ParamError, match="_t_two: unknown argument 'kk'"):
        invoke("_t_two", [np.ones(2), np.ones(2)], kk=1)


# --- bad registrations ------------------------------------------------------------------
def test_a_property_without_infer_shape_or_create_operator_is_refused():
    class NoShape(OperatorProperty):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return ScaledSquare(1.0)

    class NoCreate(OperatorProperty):
        def infer_shape(self, in_shapes):
            return in_shapes, [in_shapes[0]], []

    with pytest.raises(OperatorPropertyError, match="_t_bad: NoShape does not implement "
                                                    "infer_shape"):
        register_op_property("_t_bad", NoShape)
    with pytest.raises(OperatorPropertyError, match="NoCreate does not implement "
                                                    "create_operator"):
        register_op_property("_t_bad", NoCreate)
    with pytest.raises(OperatorPropertyError, match="needs an OperatorProperty subclass"):
        register_op_property("_t_bad", object)
    with pytest.raises(registry.OperatorNotFound):
        registry.get("_t_bad")


def test_duplicate_names_are_refused(reg):
    with pytest.raises(Exception, match="operator 'Activation' is already registered"):
        register_op_property("Activation", ScaledSquareProp)
    reg("_t_twice", ScaledSquareProp)
    with pytest.raises(Exception, match="operator '_t_twice' is already registered"):
        register_op_property("_t_twice", ScaledSquareProp)
    # A taken backward name refuses the pair before either is registered.
    registry.register(registry.OpDef("_backward__t_free", arguments=("data",),
                                     infer_shape=None, infer_type=None, compute={}))
    try:
        with pytest.raises(Exception, match="operator '_backward__t_free' is already "
                                            "registered"):
            register_op_property("_t_free", ScaledSquareProp)
        with pytest.raises(registry.OperatorNotFound):
            registry.get("_t_free")
    finally:
        registry._unregister("_backward__t_free")


@pytest.mark.parametrize("attr, value, match", [
    ("params", {"k": 1.0}, r"params\['k'\] must be a Param"),
    ("declare_backward_dependency", lambda self, og, i, o: [og[0], 7],
     r"declare_backward_dependency\(\) returned 7, which is none of the ids"),
    ("declare_backward_dependency", lambda self, og, i, o: [og[0], og[0]],
     "lists an entry twice"),
    ("backward_inplace_option", lambda self, og, i, o, ig: [(o[0], ig[0])],
     r"pairs \(2, 0\): want \(an id that declare_backward_dependency lists"),
    ("forward_inplace_option", lambda self, i, o: [(o[0], i[0])],
     r"forward_inplace_option\(\) pairs \(0, 1\)"),
    ("num_visible_outputs", lambda self: 2, r"num_visible_outputs\(\) must be an int in \[1, 1\]"),
    ("list_outputs", lambda self: "output", r"list_outputs\(\) must return a list of str"),
    ("list_auxiliary_states", lambda self: ["data"], "are both arguments and auxiliary states"),
    ("devices", ("gpu",), r"devices must be \('cpu',\) or \('cpu', 'gpu'\)"),
    ("forward_resource", lambda self, s: ["disk"], "must return ResourceRequest kinds"),
])
def test_malformed_properties_are_refused_at_registration(attr, value, match):
    cls = type("Bad", (ScaledSquareProp,), {attr: value})
    with pytest.raises(OperatorPropertyError, match=match):
        register_op_property("_t_malformed", cls)
    for name in ("_t_malformed", "_backward__t_malformed"):
        with pytest.raises(registry.OperatorNotFound):
            registry.get(name)


@pytest.mark.parametrize("shapes, match", [
    (lambda s: (s, [s[0], s[0]], []), r"returned 2 output shape\(s\) for 1 output\(s\) "
                                      r"\(output\)"),
    (lambda s: (s, [s[0]], [s[0]]), r"returned 1 auxiliary state shape\(s\) for 0"),
    (lambda s: ([(1,)], [s[0]], []), r"argument 'data' has shape \(2, 3\), but infer_shape "
                                     r"expects \(1,\)"),
    (lambda s: [s[0]], r"must return \(in_shapes, out_shapes, aux_shapes\)"),
])
def test_wrong_shapes_from_infer_shape_are_clear_errors(reg, shapes, match):
    cls = type("WrongShapes", (ScaledSquareProp,),
               {"infer_shape": lambda self, in_shapes: shapes(in_shapes)})
    reg("_t_wrong", cls)
    with pytest.raises((OperatorPropertyError, ShapeError), match="_t_wrong.*" + match):
        invoke("_t_wrong", [np.ones((2, 3))])


def test_create_operator_must_return_an_operator(reg):
    cls = type("NotAnOp", (ScaledSquareProp,),
               {"create_operator": lambda self, ctx, s, t: object()})
    reg("_t_notop", cls)
    with pytest.raises(OperatorPropertyError, match="create_operator returned object, not an "
                                                    "Operator"):
        invoke("_t_notop", [np.ones(2)])


def test_a_python_operator_may_declare_the_gpu(reg):
    op = reg("_t_gsqr", type("GpuSqr", (ScaledSquareProp,), {"devices": ("cpu", "gpu")}))
    assert set(op.compute) == {"cpu", "gpu"}
    assert set(registry.get("_backward__t_gsqr").compute) == {"cpu", "gpu"}


@pytest.mark.gpu
def test_python_operator_on_the_gpu(reg):
    import cupy
    reg("_t_gsqr", type("GpuSqr", (ScaledSquareProp,), {"devices": ("cpu", "gpu")}))
    x = np.linspace(-1, 1, 6)
    np.testing.assert_allclose(cupy.asnumpy(invoke("_t_gsqr", [cupy.asarray(x)], k=2.0)),
                               2 * x ** 2)
    assert str(ScaledSquareProp.seen[-1][0]) == "gpu(0)"
    g = invoke("_backward__t_gsqr", [cupy.ones(6), cupy.asarray(x)], k=1.5)
    np.testing.assert_allclose(cupy.asnumpy(g), 3 * x)
