"""mx.autograd end to end (mx-ndarray's tape, mx-graph's backward
programs): gradients against NumPy formulas and finite differences,
against the simple_bind executor for the same networks, grad_req,
retain_graph, higher order, Function, get_symbol, and MXNet 1.9.1's
behaviour and messages where a script could depend on them."""
import pathlib
import threading

import numpy as np
import pytest

import mx
from mx import autograd as ag

RNG = np.random.default_rng(0)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def variable(value, grad_req="write"):
    x = mx.nd.array(value)
    x.attach_grad(grad_req)
    return x


def numeric_grad(f, x, eps=1e-3):
    """Central differences of scalar ``f`` (NumPy in float64) at ``x``."""
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# -- state ------------------------------------------------------------------
def test_state_as_mxnet():
    assert (ag.is_recording(), ag.is_training()) == (False, False)
    with ag.record():
        assert (ag.is_recording(), ag.is_training()) == (True, True)
        with ag.pause():
            assert (ag.is_recording(), ag.is_training()) == (False, False)
        with ag.predict_mode():
            assert (ag.is_recording(), ag.is_training()) == (True, False)
    with ag.record(train_mode=False):
        assert (ag.is_recording(), ag.is_training()) == (True, False)
        with ag.train_mode():
            assert ag.is_training()
    assert (ag.is_recording(), ag.is_training()) == (False, False)
    # MXNet 1.9.1: set_recording(True), set_recording(False), set_training(True),
    # set_training(False) return False, True, False, True.
    assert [ag.set_recording(True), ag.set_recording(False), ag.set_training(True),
            ag.set_training(False)] == [False, True, False, True]


def test_state_restored_after_exception():
    with pytest.raises(RuntimeError):
        with ag.record():
            raise RuntimeError("inside")
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        with pytest.raises(RuntimeError):
            with ag.pause():
                raise RuntimeError("inside")
        assert ag.is_recording() and ag.is_training()


def test_recording_is_per_thread():
    x = variable([1.0, 2.0])
    seen = {}

    def other():
        seen["recording"] = ag.is_recording()
        seen["y"] = x * 2           # this thread does not record

    with ag.record():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        y = x * 3
    assert seen["recording"] is False
    assert seen["y"]._ag_node is None
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 3])
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        seen["y"].backward()


# -- gradients ---------------------------------------------------------------
UNARY = [
    ("sin", np.sin, np.cos),
    ("exp", np.exp, np.exp),
    ("tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)),
     lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    ("square", np.square, lambda x: 2 * x),
]


@pytest.mark.parametrize("name,f,df", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_formula(name, f, df):
    v = rand(3, 4)
    x = variable(v)
    with ag.record():
        y = getattr(mx.nd, name)(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), f(v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), df(v), rtol=1e-4, atol=1e-6)


def test_expression_against_finite_differences():
    a, b = rand(2, 3), rand(2, 3, low=0.5, high=1.5)

    def f(a, b):
        return float(np.sum(np.tanh(a * b + 2.0) / b - a ** 2))
    x, w = variable(a), variable(b)
    with ag.record():
        y = mx.nd.sum(mx.nd.tanh(x * w + 2.0) / w - x ** 2)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), numeric_grad(lambda v: f(v, b), a),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(w.grad.asnumpy(), numeric_grad(lambda v: f(a, v), b),
                               rtol=1e-3, atol=1e-4)


def test_fully_connected_against_numpy():
    xv, wv, bv, og = rand(5, 4), rand(3, 4), rand(3), rand(5, 3)
    x, w, b = variable(xv), variable(wv), variable(bv)
    with ag.record():
        y = mx.nd.FullyConnected(x, w, b, num_hidden=3)
    y.backward(mx.nd.array(og))
    np.testing.assert_allclose(x.grad.asnumpy(), og @ wv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.asnumpy(), og.T @ xv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), og.sum(0), rtol=1e-5, atol=1e-6)


def test_shared_input_sums_contributions():
    v = rand(4)
    x = variable(v)
    with ag.record():
        y = x * x + mx.nd.sin(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * v + np.cos(v), rtol=1e-5)


@pytest.mark.parametrize("head", [None, [2.0, 3.0]])
def test_one_gradient_for_two_variables(head):
    """y = a + b: both gradients are the head gradient itself (one slot
    read by two results, or a value the caller holds): each gets a copy."""
    a, b = variable([1.0, 2.0]), variable([3.0, 4.0])
    with ag.record():
        y = a + b
    y.backward(None if head is None else mx.nd.array(head))
    want = [1, 1] if head is None else head
    np.testing.assert_allclose(a.grad.asnumpy(), want)
    np.testing.assert_allclose(b.grad.asnumpy(), want)
    a.grad[:] = 7
    np.testing.assert_allclose(b.grad.asnumpy(), want)     # not the same array


def test_views_of_recorded_arrays_are_recorded():
    """MXNet records reshape and slicing (ReshapeWithRecord/SliceWithRecord)."""
    x = variable(np.arange(6, dtype=np.float32))
    with ag.record():
        y = mx.nd.sum(x.reshape((3, 2))[1:3] * 2)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [0, 0, 2, 2, 2, 2])


def test_head_gradient_and_multiple_heads():
    v = rand(3)
    x = variable(v)
    with ag.record():
        y1, y2 = x * 2, mx.nd.exp(x)
    ag.backward([y1, y2], [mx.nd.array([1, 10, 100]), None])
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.array([1, 10, 100]) + np.exp(v),
                               rtol=1e-5)


# -- grad_req ------------------------------------------------------------------
def test_grad_req_write_add_null():
    xv = rand(3)
    w = variable(np.ones(3, np.float32), "add")
    n = variable(np.ones(3, np.float32), "null")
    x = variable(xv)
    for _ in range(3):
        with ag.record():
            y = mx.nd.sum(w * x * n)
        y.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), 3 * xv, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), np.ones(3))   # 'write': the last one
    assert n.grad is None                                      # as MXNet's
    w.grad[:] = 0
    with ag.record():
        y = mx.nd.sum(w * x)
    y.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), xv, rtol=1e-6)


def test_write_without_path_gives_zeros():
    x, z = variable([1.0, 2.0]), variable([5.0, 5.0])
    z.grad[:] = 7
    with ag.record():
        y = x * 2 + z * 0
        u = x * 3
    u.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 3])


def test_mark_variables():
    x, g = mx.nd.array([1.0, 2.0]), mx.nd.zeros(2)
    ag.mark_variables([x], [g], "write")
    with ag.record():
        y = x * x
    y.backward()
    np.testing.assert_allclose(g.asnumpy(), [2, 4])
    with pytest.raises(ValueError, match="grad_req"):
        ag.mark_variables([x], [g], "sometimes")
    with pytest.raises(ValueError, match="must match"):
        ag.mark_variables([x, x], [g], "write")


def test_detach_stops_the_gradient():
    x = variable([1.0, 2.0, 3.0])
    with ag.record():
        y = (x * 2).detach() * x
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4, 6])


def test_pause_inside_record():
    x = variable([1.0, 2.0])
    with ag.record():
        y = x * 3
        with ag.pause():
            c = x * 100           # not recorded: a constant below
        z = y * c
    assert c._ag_node is None
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * np.array([100, 200]))


# -- retain_graph and errors -----------------------------------------------------
NOT_IN_GRAPH = "Cannot differentiate node because it is not in a computational graph"


def test_backward_twice_needs_retain_graph():
    x = variable([1.0, 2.0])
    with ag.record():
        y = mx.nd.sum(x * x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4])
    with pytest.raises(mx.MXNetError, match="pass retain_graph=True to backward"):
        y.backward()


def test_errors_name_what_is_wrong():
    x = variable([1.0, 2.0])
    with pytest.raises(mx.MXNetError, match=NOT_IN_GRAPH):
        (x * 2).backward()                      # not recorded
    with pytest.raises(mx.MXNetError, match=NOT_IN_GRAPH):
        mx.nd.ones(2).backward()
    c = mx.nd.ones(2)
    with ag.record():
        y = c * 2                                # no input on the tape
    with pytest.raises(mx.MXNetError, match=NOT_IN_GRAPH):
        y.backward()
    with ag.record():
        y = x * 2
    with pytest.raises(ValueError, match="head_grads\\[0\\] must be an NDArray of the head's "
                                         "shape \\(2,\\)"):
        y.backward(mx.nd.ones(3))
    with pytest.raises(mx.MXNetError, match="2-th variable because it does not require"):
        ag.grad(y, [x, mx.nd.ones(2)])


def test_inplace_on_recorded_arrays_raises_as_mxnet():
    x = variable([1.0, 2.0])
    with ag.record():
        y = x * 2
        with pytest.raises(mx.MXNetError, match="Assigning to NDArrays that are already in a "
                                                "computational graph"):
            y += 1
        with pytest.raises(mx.MXNetError, match="inplace operations"):
            mx.nd.relu(y, out=x)
        c = mx.nd.ones(2)
        c += 1                                   # off the tape: allowed, as in MXNet
        z = mx.nd.zeros(2)
        mx.nd.relu(x, out=z)                     # a fresh `out` joins the tape
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1, 1])


# -- grad and higher order ---------------------------------------------------------
def test_grad_returns_new_arrays():
    v = rand(3)
    x = variable(v)
    x.grad[:] = 42
    with ag.record():
        y = mx.nd.sin(x)
    g = ag.grad(y, x)
    np.testing.assert_allclose(g.asnumpy(), np.cos(v), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), 42)


def test_grad_of_an_unrelated_variable_is_zeros():
    x, z = variable([1.0, 2.0]), variable([3.0, 4.0])
    with ag.record():
        y = x * 2
        u = z * 3                               # on the tape, but y does not read z
    gx, gz = ag.grad(y, [x, u])
    np.testing.assert_allclose(gx.asnumpy(), [2, 2])
    np.testing.assert_allclose(gz.asnumpy(), [0, 0])


def test_grad_of_identity_is_a_copy():
    x = variable([1.0, 2.0])
    with ag.record():
        y = x * 1.0
    hg = mx.nd.array([3.0, 4.0])
    g = ag.grad(y, [x], head_grads=[hg])[0]
    np.testing.assert_allclose(g.asnumpy(), [3, 4])


def test_second_order_cube():
    v = rand(4)
    x = variable(v)
    with ag.record():
        y = x * x * x
        dy = ag.grad(y, [x], create_graph=True)[0]
    np.testing.assert_allclose(dy.asnumpy(), 3 * v ** 2, rtol=1e-5)
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * v, rtol=1e-5)


def test_third_order_sin():
    v = rand(3)
    x = variable(v)
    with ag.record():
        y = mx.nd.sin(x)
        d1 = ag.grad(y, x, create_graph=True)
        d2 = ag.grad(d1, x, create_graph=True)
    d2.backward()
    np.testing.assert_allclose(d1.asnumpy(), np.cos(v), rtol=1e-5)
    np.testing.assert_allclose(d2.asnumpy(), -np.sin(v), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(x.grad.asnumpy(), -np.cos(v), rtol=1e-5)


# -- Function and get_symbol ---------------------------------------------------------
class Sigmoid(ag.Function):
    def forward(self, x):
        y = 1 / (1 + mx.nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


def test_function():
    v = rand(5)
    x = variable(v)
    with ag.record():
        f = Sigmoid()
        y = f(x)
        z = mx.nd.sum(y * 2)
    z.backward()
    s = 1 / (1 + np.exp(-v))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * (1 - s), rtol=1e-5)
    with pytest.raises(AssertionError, match="only be called once"):
        f(x)


def test_function_tapes_are_not_cached():
    """A Function's node holds that Function (user state): its tapes never
    reuse a program."""
    from mx_ndarray import _autograd
    x = variable([1.0, 2.0])
    with ag.record():
        y = Sigmoid()(x)
    y.backward()
    before = _autograd.program_cache_size()
    with ag.record():
        y = Sigmoid()(x)
    y.backward()
    assert _autograd.program_cache_size() == before


def test_function_with_two_inputs_and_outputs():
    class Both(ag.Function):
        def forward(self, a, b):
            return a * b, a + b

        def backward(self, d_mul, d_add):
            a, b = self.inputs
            return d_mul * b + d_add, d_mul * a + d_add

    av, bv = rand(3), rand(3)
    a, b = variable(av), variable(bv)
    with ag.record():
        f = Both()
        f.inputs = (a.detach(), b.detach())
        p, s = f(a, b)
        loss = mx.nd.sum(p * 3 + s)
    loss.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), 3 * bv + 1, rtol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), 3 * av + 1, rtol=1e-5)


def test_get_symbol():
    x = variable(rand(1, 3))
    w, b = mx.nd.ones((2, 3)), mx.nd.ones(2)
    with ag.record():
        y = mx.nd.relu(mx.nd.FullyConnected(x, w, b, num_hidden=2)) * 2 + 1
    s = ag.get_symbol(y)
    assert isinstance(s, mx.sym.Symbol)
    assert s.list_arguments() == ["var0", "null1", "null2"]     # as MXNet names them
    assert [n["op"] for n in __import__("json").loads(s.tojson())["nodes"]] == [
        "null", "null", "null", "FullyConnected", "relu", "_mul_scalar", "_plus_scalar"]
    # The symbol computes what was recorded.
    ex = s.bind(mx.cpu(), {"var0": x, "null1": w, "null2": b})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), y.asnumpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="record"):
        ag.get_symbol(mx.nd.ones(2))


# -- training behaviour ------------------------------------------------------------
def test_dropout_follows_train_mode_and_replays_its_mask():
    x = variable(np.ones((50, 40), np.float32))
    with ag.record():
        y = mx.nd.Dropout(x, p=0.5)
    y.backward()
    mask = y.asnumpy() != 0
    assert 0.3 < mask.mean() < 0.7
    # The gradient uses the forward's mask (its hidden output), not a new draw.
    np.testing.assert_allclose(x.grad.asnumpy(), mask * 2.0)
    with ag.record(train_mode=False):
        y = mx.nd.Dropout(x, p=0.5)
    np.testing.assert_allclose(y.asnumpy(), 1.0)


def test_rrelu_replays_its_slopes():
    """LeakyReLU rrelu draws its slopes in training (a hidden output) and
    uses the mean slope in inference; backward reads the drawn ones."""
    v = -np.ones((20, 30), np.float32)
    x = variable(v)
    with ag.record():
        # rrelu returns the output and its slopes, as MXNet 1.9.1 does
        y, mask = mx.nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.4)
    y.backward()
    slopes = y.asnumpy() / v
    assert 0.1 <= slopes.min() and slopes.max() <= 0.4 and slopes.std() > 0.01
    np.testing.assert_allclose(mask.asnumpy(), slopes, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), slopes, rtol=1e-6)
    with ag.record(train_mode=False):
        y, _ = mx.nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.4)
    np.testing.assert_allclose(y.asnumpy(), -0.25, rtol=1e-6)


def test_custom_operator_records():
    class Scale(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 3)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 3)

    @mx.operator.register("ag_scale3")
    class ScaleProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, in_shape, []

        def create_operator(self, ctx, shapes, dtypes):
            return Scale()

    x = variable([1.0, 2.0])
    for _ in range(2):
        with ag.record():
            y = mx.nd.Custom(x, op_type="ag_scale3") * x
        y.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), [6, 12])


# -- autograd against the executor ----------------------------------------------------
def _mlp(F, data, w1, b1, w2, b2):
    h = F.relu(F.FullyConnected(data, w1, b1, num_hidden=8))
    return F.FullyConnected(h, w2, b2, num_hidden=4)


def _convnet(F, data, cw, cb, gamma, beta, mm, mv, fw, fb):
    c = F.Convolution(data, cw, cb, kernel=(3, 3), num_filter=4)
    n = F.BatchNorm(c, gamma, beta, mm, mv, fix_gamma=False)
    d = F.Dropout(F.relu(n), p=0.3)
    return F.FullyConnected(F.Flatten(d), fw, fb, num_hidden=3)


NETS = {
    "mlp": (_mlp, {"data": (5, 6), "w1": (8, 6), "b1": (8,), "w2": (4, 8), "b2": (4,)}, []),
    "convnet": (_convnet, {"data": (2, 2, 6, 6), "cw": (4, 2, 3, 3), "cb": (4,),
                           "gamma": (4,), "beta": (4,), "mm": (4,), "mv": (4,),
                           "fw": (3, 64), "fb": (3,)}, ["mm", "mv"]),
}


@pytest.mark.parametrize("net", list(NETS))
def test_same_gradients_as_simple_bind(net):
    fn, shapes, aux = NETS[net]
    values = {k: rand(*s) for k, s in shapes.items()}
    values["mv"] = np.abs(values.get("mv", np.ones(1, np.float32))) + 0.5
    og = rand(*{"mlp": (5, 4), "convnet": (2, 3)}[net])
    names = list(shapes)
    # The executor.
    sym = fn(mx.sym, *[mx.sym.var(k) for k in names])
    ex = sym.simple_bind(mx.cpu(), grad_req="write", data=shapes["data"])
    for k in names:
        (ex.aux_dict if k in aux else ex.arg_dict)[k][:] = values[k]
    mx.random.seed(7)
    ex.forward(is_train=True)
    ex.backward(mx.nd.array(og))
    # Autograd.
    arrays = {k: mx.nd.array(values[k]) for k in names}
    for k in names:
        if k not in aux:
            arrays[k].attach_grad()
    mx.random.seed(7)
    with ag.record():
        out = fn(mx.nd, *[arrays[k] for k in names])
    out.backward(mx.nd.array(og))
    np.testing.assert_allclose(out.asnumpy(), ex.outputs[0].asnumpy(), rtol=1e-5, atol=1e-6)
    for k in names:
        if k in aux:
            np.testing.assert_allclose(arrays[k].asnumpy(), ex.aux_dict[k].asnumpy(),
                                       rtol=1e-5, atol=1e-6, err_msg=k)
        else:
            np.testing.assert_allclose(arrays[k].grad.asnumpy(), ex.grad_dict[k].asnumpy(),
                                       rtol=1e-4, atol=1e-5, err_msg=k)


def test_imperative_mlp_training_matches_mxnet():
    """benchmarks/graph_nets.py's AutogradTrainer (the workload of
    compare_autograd_mlp.py) against what MXNet 1.9.1's autograd computed
    with the same code (tests/data/autograd_reference.npz)."""
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "tests" / "data"))
    from benchmarks import graph_nets
    from make_autograd_reference import STEPS, input_sums
    with np.load(root / "tests" / "data" / "autograd_reference.npz") as f:
        ref = dict(f)
    inputs = graph_nets.make_inputs("mlp")
    np.testing.assert_allclose(input_sums(inputs), ref["input_sums"], rtol=1e-12,
                               err_msg="graph_nets.make_inputs changed: regenerate the "
                                       "reference (tests/data/README.md)")
    trainer = graph_nets.AutogradTrainer(mx, graph_nets.AUTOGRAD_NET, inputs)
    np.testing.assert_allclose(trainer.outputs(0), ref["outputs"], rtol=1e-5, atol=1e-7)
    for i in range(STEPS):
        trainer.step(i)
        if i == 0:
            for k, w in trainer.weights.items():
                np.testing.assert_allclose(w.grad.asnumpy(), ref[f"grad.{k}"], rtol=2e-4,
                                           atol=1e-5, err_msg=k)
    for k, v in trainer.params().items():
        # The change, not the value: an update is small next to the weight.
        np.testing.assert_allclose(v - inputs[k], ref[f"param.{k}"] - inputs[k], rtol=2e-4,
                                   atol=1e-6, err_msg=k)


def test_repeated_tape_reuses_its_program():
    from mx_ndarray import _autograd
    x = variable(rand(4, 3))
    w = variable(rand(2, 3))
    grads = []
    for step in range(4):
        with ag.record():
            y = mx.nd.FullyConnected(x, w, num_hidden=2, no_bias=True)
            loss = mx.nd.sum(mx.nd.relu(y) * (step + 1))
        loss.backward()
        grads.append(w.grad.asnumpy().copy())
        if step == 0:
            built = _autograd.program_cache_size()
    # Equal structure but a different scalar: one program per scalar value.
    assert _autograd.program_cache_size() == built + 3
    for step, g in enumerate(grads):
        np.testing.assert_allclose(g, grads[0] * (step + 1), rtol=1e-5)


def test_ctc_loss_gradient_matches_mxnet():
    """CTCLoss's gradient comes from its hidden output, scaled by the head
    gradient; MXNet 1.9.1's (packages/mx-ops/tests/data/ctc_mxnet191.npz)
    through mx.nd, mx.nd.contrib and a bound symbol."""
    data = np.load(pathlib.Path(__file__).parents[1] / "packages" / "mx-ops" / "tests"
                   / "data" / "ctc_mxnet191.npz")
    case = {k.split("/")[1]: data[k] for k in data.files if k.startswith("lengths/")}
    lengths = [mx.nd.array(case["data_lengths"]), mx.nd.array(case["label_lengths"])]
    for fn in (mx.nd.CTCLoss, mx.nd.contrib.ctc_loss):
        x = variable(case["data"])
        with ag.record():
            y = fn(x, mx.nd.array(case["label"]), *lengths, use_data_lengths=True,
                   use_label_lengths=True)
        y.backward(mx.nd.array(case["og"]))
        np.testing.assert_allclose(y.asnumpy(), case["loss"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(x.grad.asnumpy(), case["grad"], rtol=1e-4, atol=1e-5)
    sym = mx.sym.CTCLoss(mx.sym.var("data"), mx.sym.var("label"), blank_label="first")
    case = {k.split("/")[1]: data[k] for k in data.files if k.startswith("first_padded/")}
    exe = sym.simple_bind(mx.cpu(), data=case["data"].shape, label=case["label"].shape)
    exe.forward(is_train=True, data=case["data"], label=case["label"])
    exe.backward(mx.nd.array(case["og"]))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), case["loss"], rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), case["grad"], rtol=1e-4,
                               atol=1e-5)


def test_ctc_loss_skips_its_hidden_gradient_only_when_not_recorded():
    """CTCLoss's hidden output (the gradient) gets req 'null' in a call
    autograd does not record: the loss is the same bits as the recorded
    call's, whose backward still gets the gradient the kernel computes."""
    from mx_ops import invoke
    from mx_ops.core._call import get_plan
    assert get_plan("CTCLoss", 3, {"use_data_lengths": True}).skip_hidden
    assert not get_plan("L2Normalization", 1, {}).skip_hidden   # its norm feeds the output
    T, N, A, L = 12, 5, 6, 4
    x = RNG.standard_normal((T, N, A)).astype(np.float32)
    label = RNG.integers(1, A, (N, L)).astype(np.float32)
    label[1, 2:] = 0                                  # padding: two labels
    lengths = np.array([12, 9, 3, 0, 7], np.float32)  # 3 or 0 steps: 4 labels do not fit
    args = [mx.nd.array(x), mx.nd.array(label), mx.nd.array(lengths)]
    plain = mx.nd.CTCLoss(*args, use_data_lengths=True).asnumpy()
    args[0].attach_grad()
    with ag.record():
        recorded = mx.nd.CTCLoss(*args, use_data_lengths=True)
    recorded.backward()
    want_loss, want_grad = invoke("CTCLoss", [x, label, lengths], use_data_lengths=True)
    np.testing.assert_array_equal(plain, recorded.asnumpy())
    np.testing.assert_array_equal(plain, want_loss)
    np.testing.assert_array_equal(args[0].grad.asnumpy(), want_grad)
    assert plain[3] == 0 and plain[0] > 0
