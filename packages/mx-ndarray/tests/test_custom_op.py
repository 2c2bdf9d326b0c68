"""Python custom operators (mx_ops.ext.custom: CustomOp, CustomOpProp, register)
through ``Custom`` / ``_backward_Custom`` on NDArrays: results against
NumPy, gradients against finite differences, auxiliary states, errors, and
the engine (callbacks that push and wait, chains, nesting, failures).

Each test registers its own op types and removes them afterwards."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mx_ndarray as nd
import mx_ops
from mx_engine.base import MXNetError
from mx_ndarray import _internal
from mx_ops.core._params import ParamError
from mx_ops.core.gradient import grad_entries
from mx_ops.core.node import make_node, variable
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext import custom
from mx_ops.ext._custom_info import CustomOpError
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient


@pytest.fixture
def reg():
    """``reg(name)(PropClass)`` registers for this test only."""
    names = []

    def add(name):
        names.append(name)
        return custom.register(name)
    yield add
    for name in names:
        custom._unregister(name)


# --- a few operators ------------------------------------------------------------------------
class Sigmoid(custom.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        self.assign(out_data[0], req[0], 1 / (1 + nd.exp(-x)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))


class SigmoidProp(custom.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Sigmoid()


class MulAdd(custom.CustomOp):
    """(a * b, a + scale * b), with scale from the prop's string argument."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], a + b * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        g0, g1 = out_grad
        self.assign(in_grad[0], req[0], g0 * b + g1)
        self.assign(in_grad[1], req[1], g0 * a + g1 * self.scale)


class MulAddProp(custom.CustomOpProp):
    def __init__(self, scale="1"):
        super().__init__(need_top_grad=True)
        assert isinstance(scale, str)        # MXNet hands every argument as a string
        self.scale = float(scale)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["prod", "sum"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad + in_data             # no out_data

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return MulAdd(self.scale)


class Counter(custom.CustomOp):
    """out = data + count; count += 1 (an auxiliary state)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + aux[0])
        aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


class CounterProp(custom.CustomOpProp):
    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Counter()


@pytest.fixture
def ops(reg):
    reg("t_sigmoid")(SigmoidProp)
    reg("t_muladd")(MulAddProp)
    reg("t_counter")(CounterProp)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --- results --------------------------------------------------------------------------------
def test_forward_and_backward_against_numpy(ops):
    x = np.linspace(-3, 3, 12).reshape(3, 4).astype(np.float32)
    y = nd.Custom(nd.array(x, dtype=x.dtype), op_type="t_sigmoid")
    np.testing.assert_allclose(y.asnumpy(), _sigmoid(x), rtol=1e-6)
    # _backward_Custom takes out_grad, in_data, out_data (the default deps).
    dy = np.arange(12, dtype=np.float32).reshape(3, 4)
    dx = _internal._backward_Custom(nd.array(dy, dtype=dy.dtype), nd.array(x, dtype=x.dtype), y, op_type="t_sigmoid")
    np.testing.assert_allclose(dx.asnumpy(), dy * _sigmoid(x) * (1 - _sigmoid(x)), rtol=1e-5)


def test_keyword_arguments_reach_the_prop_as_strings_and_outputs_are_a_list(ops):
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    b = np.ones((2, 3)) * 0.5
    prod, total = nd.Custom(nd.array(a, dtype=a.dtype), nd.array(b, dtype=b.dtype), op_type="t_muladd", scale=3)
    np.testing.assert_allclose(prod.asnumpy(), a * b)
    np.testing.assert_allclose(total.asnumpy(), a + 3 * b)
    assert prod.dtype == np.float64
    assert mx_ops.get("Custom").input_names(
        mx_ops.get("Custom").parse_call({"op_type": "t_muladd"}, 2)) == ["a", "b"]


def test_numeric_gradients_through_the_gradient_maker(ops):
    rng = np.random.default_rng(0)
    check_numeric_gradient("Custom", [rng.normal(size=(2, 3))], op_type="t_sigmoid")
    check_numeric_gradient("Custom", [rng.normal(size=(3,)), rng.normal(size=(3,))],
                           op_type="t_muladd", scale="2.5", rtol=1e-5, atol=1e-6)


def test_the_gradient_maker_follows_declare_backward_dependency(ops):
    x, y = variable("x"), variable("y")
    node = make_node("Custom", [x, y], op_type="t_muladd", scale=2)
    g = [variable("g0").outputs()[0], variable("g1").outputs()[0]]
    grads = grad_entries(node, g)
    back = grads[0].node
    assert back.op.name == "_backward_Custom" and grads[1].node is back
    # out_grad + in_data, in that order; no out_data.
    assert [e.node.name for e in back.inputs] == ["g0", "g1", "x", "y"]
    assert back.op.input_names(back.params) == ["prod_grad", "sum_grad", "a", "b"]
    # An aux state gets no gradient; the backward still receives it.
    c = make_node("Custom", [x, variable("count")], op_type="t_counter")
    grads = grad_entries(c, [variable("g").outputs()[0]])
    assert grads[1] is None
    assert [e.node.name for e in grads[0].node.inputs] == ["g", "count"]


def test_forward_and_backward_share_one_operator_per_node(reg):
    made = []

    class Prop(SigmoidProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            made.append((ctx, in_shapes, in_dtypes))
            return Sigmoid()

    reg("t_counted")(Prop)
    x = np.array([0.5, -1.0])
    got = symbolic_gradient("Custom", [x], [np.ones(2)], op_type="t_counted")[0]
    np.testing.assert_allclose(got, _sigmoid(x) * (1 - _sigmoid(x)))
    assert len(made) == 1
    ctx, shapes, dtypes = made[0]
    assert str(ctx) == "cpu(0)" and shapes == [[2]] and dtypes == [1]   # float64's flag


def test_req_add_and_null_reach_forward_through_mx_ops_invoke(ops):
    x = np.array([0.0, 1.0], np.float32)
    out = np.array([10.0, 20.0], np.float32)
    mx_ops.invoke("Custom", [x], out=out, req="add", op_type="t_sigmoid")
    np.testing.assert_allclose(out, [10.5, 20 + _sigmoid(1.0)], rtol=1e-6)
    mx_ops.invoke("Custom", [x], out=out, req="null", op_type="t_sigmoid")
    np.testing.assert_allclose(out, [10.5, 20 + _sigmoid(1.0)], rtol=1e-6)


def test_aux_states_are_updated_in_place_in_push_order(ops):
    count = nd.zeros((3,))
    before = count * 1
    outs = [nd.Custom(nd.ones((3,)), count, op_type="t_counter") for _ in range(4)]
    after = count * 1
    np.testing.assert_array_equal(before.asnumpy(), 0)
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(o.asnumpy(), 1 + i)
    np.testing.assert_array_equal(after.asnumpy(), 4)
    # The NumPy path writes the caller's array.
    c = np.zeros(3, np.float32)
    mx_ops.invoke("Custom", [np.ones(3, np.float32), c], op_type="t_counter")
    np.testing.assert_array_equal(c, 1)


def test_is_train_reaches_forward_and_the_thread_flag(reg):
    seen = []

    class Op(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            seen.append((is_train, mx_ops.core.training.is_training()))
            self.assign(out_data[0], req[0], in_data[0])

    class Prop(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Op()

    reg("t_train")(Prop)
    nd.Custom(nd.ones(2), op_type="t_train").wait_to_read()
    with mx_ops.core.training.train_mode():
        nd.Custom(nd.ones(2), op_type="t_train").wait_to_read()
    assert seen == [(False, False), (True, True)]


def test_need_top_grad_false_leaves_out_grad_out(reg):
    class Loss(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            assert out_grad == [None]
            self.assign(in_grad[0], req[0], in_data[0] - in_data[1])

    class LossProp(custom.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=False)

        def list_arguments(self):
            return ["data", "label"]

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Loss()

    reg("t_loss")(LossProp)
    x, label = nd.array([1.0, 2.0]), nd.array([0.5, 0.5])
    y = nd.Custom(x, label, op_type="t_loss")
    dx, dlabel = _internal._backward_Custom(x, label, y, op_type="t_loss")
    np.testing.assert_allclose(dx.asnumpy(), [0.5, 1.5])
    assert dlabel.shape == (2,)


# --- the engine -----------------------------------------------------------------------------
class Inspect(custom.CustomOp):
    """Pushes other operators and waits on them inside forward."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        host = x.asnumpy()
        doubled = (x * 2).asnumpy()
        self.assign(out_data[0], req[0], nd.array(host + doubled) + nd.exp(x) * 0)


class InspectProp(custom.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Inspect()


class Outer(custom.CustomOp):
    """A custom op inside a custom op, waiting on the inner one."""

    def __init__(self, wait):
        super().__init__()
        self.wait = wait

    def forward(self, is_train, req, in_data, out_data, aux):
        inner = nd.Custom(in_data[0], op_type="t_sigmoid")
        if self.wait:
            inner.asnumpy()
        self.assign(out_data[0], req[0], inner + 1)


class OuterProp(custom.CustomOpProp):
    def __init__(self, wait="0"):
        super().__init__()
        self.wait = wait == "1"

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Outer(self.wait)


def test_forward_may_push_operators_and_wait_on_them(ops, reg):
    reg("t_inspect")(InspectProp)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(nd.Custom(nd.array(x, dtype=x.dtype) + 1, op_type="t_inspect").asnumpy(),
                               3 * (x + 1))


def test_chains_and_nesting(ops, reg):
    reg("t_outer")(OuterProp)
    x = np.linspace(-1, 1, 7).astype(np.float32)
    y = nd.array(x, dtype=x.dtype)
    for _ in range(5):
        y = nd.Custom(y, op_type="t_sigmoid")
    want = x
    for _ in range(5):
        want = _sigmoid(want)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5)
    for wait in (0, 1):
        z = nd.Custom(nd.Custom(nd.array(x, dtype=x.dtype), op_type="t_outer", wait=wait), op_type="t_outer",
                      wait=wait)
        np.testing.assert_allclose(z.asnumpy(), _sigmoid(_sigmoid(x) + 1) + 1, rtol=1e-5)


def test_an_exception_in_forward_surfaces_at_the_next_wait(reg):
    class Boom(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("boom in forward")

    class BoomProp(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Boom()

    reg("t_boom")(BoomProp)
    x = nd.ones(3)
    y = nd.Custom(x, op_type="t_boom")
    z = y + 1                           # depends on the failed op: carries its error
    with pytest.raises(MXNetError, match=r"Custom operator 't_boom': Boom.forward raised "
                                         r"ValueError: boom in forward") as info:
        z.asnumpy()
    assert "Traceback" in str(info.value) and "raise ValueError" in str(info.value)
    y.wait_to_read()                    # raised once: y no longer carries it (MXNet 1.9)
    # The engine goes on: other work and other custom ops run, nothing stays pending.
    np.testing.assert_array_equal((x + 1).asnumpy(), [2, 2, 2])
    nd.waitall()


def test_a_failure_in_work_forward_pushed_names_the_op(reg):
    class Bad(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            idx = nd.array(np.array([[7]], np.int64))       # out of range: fails on the engine
            self.assign(out_data[0], req[0], nd.gather_nd(in_data[0], idx))

    class BadProp(custom.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [[1]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Bad()

    reg("t_bad")(BadProp)
    y = nd.Custom(nd.ones(3), op_type="t_bad")
    with pytest.raises(MXNetError, match=r"Custom \(op_type 't_bad'\): an operation its "
                                         r"callback pushed failed.*gather_nd"):
        y.asnumpy()
    nd.waitall()


def test_an_exception_in_backward_names_the_op(reg):
    class NoBack(Sigmoid):
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            raise RuntimeError("no backward here")

    class Prop(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return NoBack()

    reg("t_noback")(Prop)
    x = nd.ones(2)
    dx = _internal._backward_Custom(x, x, x, op_type="t_noback")
    with pytest.raises(MXNetError, match="'t_noback': NoBack.backward raised RuntimeError"):
        dx.asnumpy()
    with pytest.raises(CustomOpError, match="no backward here"):
        mx_ops.invoke("_backward_Custom", [np.ones(2)] * 3, op_type="t_noback")


_SCRIPT = textwrap.dedent("""
    import numpy as np
    import mx_ndarray as nd
    from mx_ops.ext import custom
    from mx_engine import engine

    class Sig(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0]
            x.asnumpy()
            self.assign(out_data[0], req[0], 1 / (1 + nd.exp(-x)))

    @custom.register("sig")
    class SigProp(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Sig()

    class Outer(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            inner = nd.Custom(in_data[0], op_type="sig")
            inner.asnumpy()
            self.assign(out_data[0], req[0], nd.Custom(inner, op_type="sig"))

    @custom.register("outer")
    class OuterProp(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Outer()

    sig = lambda v: 1 / (1 + np.exp(-v))
    x = np.linspace(-2, 2, 16).astype(np.float32)
    outs = []
    for i in range(150):
        y = nd.array(x + i)
        for _ in range(3):
            y = nd.Custom(y, op_type="outer" if i % 3 == 0 else "sig")
        outs.append(y)
    for i, y in enumerate(outs):
        want = x + i
        for _ in range(3):
            want = sig(sig(want)) if i % 3 == 0 else sig(want)
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5)
    print("ok", engine.engine_type())
""")


@pytest.mark.parametrize("env", [{"MXNET_CPU_WORKER_NTHREADS": "1"},
                                 {"MXNET_CPU_WORKER_NTHREADS": "1",
                                  "MXNET_CUSTOM_OP_NUM_THREADS": "1"},
                                 {"MXNET_ENGINE_TYPE": "NaiveEngine"}],
                         ids=["one-worker", "one-custom-thread", "naive"])
def test_many_custom_ops_in_flight_do_not_deadlock(env):
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")


# --- errors ---------------------------------------------------------------------------------
def test_unregistered_and_missing_op_type_are_clear_errors(ops):
    with pytest.raises(ParamError, match=r"no custom operator is registered as op_type "
                                         r"'t_nope'.*'t_sigmoid'"):
        nd.Custom(nd.ones(2), op_type="t_nope")
    with pytest.raises(ParamError, match="argument 'op_type' is required"):
        nd.Custom(nd.ones(2))
    with pytest.raises(ParamError, match=r"Custom: takes 2 input\(s\) \(a, b\), got 1"):
        nd.Custom(nd.ones(2), op_type="t_muladd")
    with pytest.raises(CustomOpError, match=r"MulAddProp\(scale='1', bias='2'\) raised "
                                            r"TypeError"):
        nd.Custom(nd.ones(2), nd.ones(2), op_type="t_muladd", scale=1, bias=2)


@pytest.mark.parametrize("ret, error, text", [
    ([[2]], CustomOpError, r"must return 2 or 3 lists"),
    (([[2]], [[2], [2]]), CustomOpError, r"returned 2 output shapes for 1 output"),
    (([[2]], [[2.5]]), ShapeError, r"returned \[2.5\] as the shape of output 'output'"),
    (([[3]], [[2]]), ShapeError, r"returned shape \(3,\) for 'data', whose input has shape "
                                 r"\(2,\)"),
    (([[2]], [[2]], [[2]]), CustomOpError, r"returned 1 aux shapes for 0 aux"),
])
def test_bad_infer_shape_results_are_clear_errors(reg, ret, error, text):
    class Prop(SigmoidProp):
        def infer_shape(self, in_shape):
            return ret

    reg("t_badshape")(Prop)
    with pytest.raises(error, match=r"Custom operator 't_badshape': Prop\.infer_shape " + text):
        nd.Custom(nd.ones(2), op_type="t_badshape")


def test_bad_declarations_are_clear_errors(reg):
    class BadType(SigmoidProp):
        def infer_type(self, in_type):
            return in_type, [np.complex64]

    class Sparse(SigmoidProp):
        def infer_storage_type(self, in_stype):
            return in_stype, ["csr"]

    class BadNames(SigmoidProp):
        def list_outputs(self):
            return "output"

    class BadDeps(SigmoidProp):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [0, 9]

    class NotAnOp(SigmoidProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return object()

    for name, cls in [("t_badtype", BadType), ("t_sparse", Sparse), ("t_badnames", BadNames),
                      ("t_baddeps", BadDeps), ("t_notop", NotAnOp)]:
        reg(name)(cls)
    x = nd.ones(2)
    with pytest.raises(TypeInferenceError, match=r"BadType.infer_type returned .*complex64.* "
                                                 r"for 'output'"):
        nd.Custom(x, op_type="t_badtype")
    with pytest.raises(TypeInferenceError, match="only dense storage"):
        nd.Custom(x, op_type="t_sparse")
    with pytest.raises(CustomOpError, match="list_outputs must return a list of str"):
        nd.Custom(x, op_type="t_badnames")
    with pytest.raises(CustomOpError, match=r"declare_backward_dependency must return ids "
                                            r"among those it was given \(0 to 2\)"):
        nd.Custom(x, op_type="t_baddeps")
    with pytest.raises(MXNetError, match="create_operator must return a CustomOp"):
        nd.Custom(x, op_type="t_notop").asnumpy()


def test_backward_without_shapes_to_go_on_is_a_clear_error(ops):
    # t_counter's backward reads only out_grad: the input gradient's shape
    # comes from a forward call, which a bare _backward_Custom lacks.
    with pytest.raises(ShapeError, match=r"_backward_Custom \(op_type 't_counter'\): the "
                                         r"shapes of the input gradients"):
        _internal._backward_Custom(nd.ones(2), nd.zeros(2), op_type="t_counter")
    # Through a node, the forward's inference supplies them.
    got = symbolic_gradient("Custom", [np.ones(2), np.zeros(2)], [np.full(2, 3.0)],
                            op_type="t_counter")
    np.testing.assert_array_equal(got[0], [3, 3])
    assert got[1] is None


def test_register_checks_its_arguments_and_warns_on_replacement(reg):
    with pytest.raises(TypeError, match="subclass of CustomOpProp"):
        custom.register("t_x")(object)
    with pytest.raises(TypeError, match="non-empty str"):
        custom.register("")
    reg("t_twice")(SigmoidProp)
    with pytest.warns(UserWarning, match="'t_twice' is registered again"):
        reg("t_twice")(MulAddProp)
    assert custom.get_prop("t_twice") is MulAddProp


@pytest.mark.gpu
def test_custom_ops_run_on_the_gpu_as_on_the_cpu(ops, reg):
    from mx_engine import cpu, gpu
    seen = []

    class Prop(InspectProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            seen.append(ctx)
            return Inspect()

    reg("t_inspect_gpu")(Prop)
    x = np.linspace(-2, 2, 10).astype(np.float32)
    for op_type in ("t_sigmoid", "t_inspect_gpu"):
        g = nd.Custom(nd.array(x, ctx=gpu(0)), op_type=op_type)
        c = nd.Custom(nd.array(x, ctx=cpu(0)), op_type=op_type)
        assert g.context == gpu(0)
        np.testing.assert_allclose(g.asnumpy(), c.asnumpy(), rtol=1e-5)
    assert sorted(map(str, seen)) == ["cpu(0)", "gpu(0)"]     # created where each ran
    count = nd.zeros((3,), ctx=gpu(0))
    outs = [nd.Custom(nd.ones((3,), ctx=gpu(0)), count, op_type="t_counter") for _ in range(3)]
    np.testing.assert_array_equal(outs[-1].asnumpy(), 3)
    np.testing.assert_array_equal(count.asnumpy(), 3)
    dy = nd.array(np.arange(10, dtype=np.float32), ctx=gpu(0))
    xg = nd.array(x, ctx=gpu(0))
    dx = _internal._backward_Custom(dy, xg, nd.Custom(xg, op_type="t_sigmoid"),
                                    op_type="t_sigmoid")
    s = _sigmoid(x)
    np.testing.assert_allclose(dx.asnumpy(), np.arange(10) * s * (1 - s), rtol=1e-5)


def test_waitall_inside_a_callback_is_an_error_not_a_deadlock(reg):
    class WaitAll(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            nd.waitall()

    class Prop(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return WaitAll()

    reg("t_waitall")(Prop)
    with pytest.raises(MXNetError, match=r"waitall\(\) inside a custom operator's callback"):
        nd.Custom(nd.ones(2), op_type="t_waitall").asnumpy()
