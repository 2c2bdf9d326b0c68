"""The executor: gradients of composed graphs against central finite
differences, grad_req semantics, bind errors, the MXNet executor API."""
import numpy as np
import pytest

import mx
from mx_engine.base import MXNetError


def _numeric_grads(sym, values, head, eps=1e-6):
    """d sum(out * head) / d each input, by central differences in float64."""
    names = sym.list_arguments()

    def f(vals):
        ex = sym.bind(mx.cpu(), {n: mx.nd.array(vals[n], dtype="float64") for n in names},
                      grad_req="null",
                      aux_states={n: mx.nd.array(vals[n], dtype="float64")
                                  for n in sym.list_auxiliary_states()})
        outs = ex.forward(is_train=True)
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(outs, head))

    grads = {}
    for n in names:
        g = np.zeros_like(values[n])
        flat, gflat = values[n].reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            hi = f(values)
            flat[i] = old - eps
            lo = f(values)
            flat[i] = old
            gflat[i] = (hi - lo) / (2 * eps)
        grads[n] = g
    return grads


def check_graph_gradient(sym, shapes, seed=0, rtol=1e-5, atol=1e-7, skip=()):
    rng = np.random.default_rng(seed)
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
    values = {n: rng.uniform(-1, 1, s) for n, s in zip(sym.list_arguments(), arg_shapes)}
    for n, s in zip(sym.list_auxiliary_states(), aux_shapes):
        values[n] = rng.uniform(0.5, 1.5, s)
    head = [rng.uniform(-1, 1, s) for s in out_shapes]
    args = {n: mx.nd.array(values[n], dtype="float64") for n in sym.list_arguments()}
    grads = {n: mx.nd.zeros(a.shape, dtype="float64") for n, a in args.items()}
    aux = {n: mx.nd.array(values[n], dtype="float64") for n in sym.list_auxiliary_states()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(h, dtype="float64") for h in head])
    expected = _numeric_grads(sym, values, head)
    for n in sym.list_arguments():
        if n in skip:
            continue
        np.testing.assert_allclose(ex.grad_dict[n].asnumpy(), expected[n], rtol=rtol,
                                   atol=atol, err_msg=f"gradient of {n}")
    return ex


def test_gradient_mlp_tanh():
    x = mx.sym.Variable("x")
    h = mx.sym.FullyConnected(x, num_hidden=4, name="fc1")
    h = mx.sym.Activation(h, act_type="tanh")
    out = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    check_graph_gradient(out, {"x": (2, 5)})


def test_gradient_sums_contributions():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    out = x * x + mx.sym.sin(x) * y + mx.sym.exp(x)
    check_graph_gradient(out, {"x": (3, 4), "y": (3, 4)})


def test_gradient_multi_output_and_unused_outputs():
    x = mx.sym.Variable("x")
    parts = mx.sym.SliceChannel(x, num_outputs=3, axis=1)
    out = mx.sym.Group([parts[0] * 2.0, mx.sym.tanh(parts[2])])
    check_graph_gradient(out, {"x": (2, 6)})


def test_gradient_convnet():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, pad=(1, 1), name="c1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="avg")
    net = mx.sym.Flatten(net)
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc")
    check_graph_gradient(net, {"data": (2, 1, 4, 4)}, rtol=1e-4, atol=1e-6)


def test_gradient_concat_broadcast():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    c = mx.sym.Concat(a, mx.sym.broadcast_mul(a, b), dim=1)
    out = mx.sym.sum(c * c, axis=1)
    check_graph_gradient(out, {"a": (2, 3), "b": (1, 3)})


def test_gradient_batchnorm_training_with_aux():
    data = mx.sym.Variable("data")
    bn = mx.sym.BatchNorm(data, fix_gamma=False, name="bn")
    out = mx.sym.FullyConnected(bn, num_hidden=2, name="fc")
    ex = check_graph_gradient(out, {"data": (4, 3)}, rtol=1e-4, atol=1e-6)
    # The moving statistics moved during the training forward passes.
    assert not np.allclose(ex.aux_dict["bn_moving_var"].asnumpy(), 1.0)


def test_loss_output_needs_no_head_gradient():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                     name="fc"), name="out")
    ex = net.simple_bind(mx.cpu(), data=(4, 5))
    rng = np.random.default_rng(0)
    ex.arg_dict["data"][:] = rng.standard_normal((4, 5))
    ex.arg_dict["fc_weight"][:] = rng.standard_normal((3, 5))
    ex.arg_dict["out_label"][:] = np.array([0, 1, 2, 1])
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward()
    x, w = ex.arg_dict["data"].asnumpy(), ex.arg_dict["fc_weight"].asnumpy()
    logits = x @ w.T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(out, p, rtol=1e-5)
    onehot = np.eye(3)[[0, 1, 2, 1]]
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), (p - onehot).T @ x,
                               rtol=1e-4, atol=1e-5)


def test_non_loss_output_requires_head_gradient():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = net.simple_bind(mx.cpu(), data=(4, 5))
    ex.forward(is_train=True)
    with pytest.raises(MXNetError, match="make_loss"):
        ex.backward()


def test_grad_req_add_and_null():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    out = mx.sym.FullyConnected(x, weight=w, num_hidden=2, no_bias=True, name="fc")
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((3, 4)).astype(np.float32)
    wv = rng.standard_normal((2, 4)).astype(np.float32)
    head = rng.standard_normal((3, 2)).astype(np.float32)
    args = {"x": mx.nd.array(xv), "w": mx.nd.array(wv)}
    start = rng.standard_normal((2, 4)).astype(np.float32)
    grads = {"x": mx.nd.zeros((3, 4)), "w": mx.nd.array(start)}
    ex = out.bind(mx.cpu(), args, args_grad=grads, grad_req={"x": "null", "w": "add"})
    assert ex.grad_arrays[0] is None
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward([mx.nd.array(head)])
    np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), start + 2 * head.T @ xv,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(grads["x"].asnumpy(), 0)


def test_unread_backward_outputs_get_null_req():
    """The gradient of an input bound with grad_req 'null' (the data's) is
    read by nothing: its backward node gets req 'null' for it, as MXNet's
    executor gives such entries kNullOp, so FullyConnected skips that GEMM;
    the parameters' gradients are unchanged."""
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=5, name="fc1"), act_type="relu")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"),
                               name="softmax")
    rng = np.random.default_rng(2)
    shapes = {"data": (4, 6), "softmax_label": (4,)}
    values = {"data": rng.standard_normal((4, 6)), "softmax_label": np.array([0, 2, 1, 2]),
              "fc1_weight": rng.standard_normal((5, 6)), "fc1_bias": rng.standard_normal(5),
              "fc2_weight": rng.standard_normal((3, 5)), "fc2_bias": rng.standard_normal(3)}
    grads = {}
    for data_req in ("null", "write"):
        reqs = {n: "write" for n in values if n != "softmax_label"}
        reqs.update(data=data_req, softmax_label="null")
        ex = out.simple_bind(mx.cpu(), grad_req=reqs, **shapes)
        for name, value in values.items():
            ex.arg_dict[name][:] = value.astype(np.float32)
        ex.forward(is_train=True)
        ex.backward()
        grads[data_req] = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
        fc1_backward = [c for _, node, _, _, c in ex._call_nodes if node.name == "fc1_backward"]
        assert fc1_backward[0].reqs[0] in ("null", 0) if data_req == "null" else \
            fc1_backward[0].reqs[0] in ("write", 1)
    assert "data" not in grads["null"]
    for name, grad in grads["null"].items():
        np.testing.assert_array_equal(grad, grads["write"][name])


def test_grad_of_identity_paths_gets_its_own_array():
    # d(x + y)/dx is the head gradient itself: the executor copies it into
    # each argument's gradient array instead of aliasing one entry twice.
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    out = x + y
    ex = out.simple_bind(mx.cpu(), x=(2, 2), y=(2, 2))
    ex.forward(is_train=True)
    head = np.arange(4, dtype=np.float32).reshape(2, 2)
    ex.backward(mx.nd.array(head))
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), head)
    np.testing.assert_array_equal(ex.grad_dict["y"].asnumpy(), head)


def test_unreachable_argument_gets_zero_gradient():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    out = mx.sym.Group([x * 2.0, mx.sym.BlockGrad(y)])
    ex = out.simple_bind(mx.cpu(), x=(2,), y=(2,))
    ex.grad_dict["y"][:] = 5.0
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((2,)), mx.nd.ones((2,))])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [2.0, 2.0])
    np.testing.assert_array_equal(ex.grad_dict["y"].asnumpy(), [0.0, 0.0])


def test_bind_errors_name_the_argument_and_shapes():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    good = {"data": mx.nd.zeros((2, 4)), "fc_weight": mx.nd.zeros((3, 4)),
            "fc_bias": mx.nd.zeros((3,))}
    with pytest.raises(MXNetError, match="fc_bias"):
        net.bind(mx.cpu(), {k: v for k, v in good.items() if k != "fc_bias"})
    bad = dict(good, fc_weight=mx.nd.zeros((3, 5)))
    with pytest.raises(MXNetError) as err:
        net.bind(mx.cpu(), bad)
    assert "fc_weight" in str(err.value) and "(3, 5)" in str(err.value)
    assert "(3, 4)" in str(err.value) or "(2, 4)" in str(err.value)
    with pytest.raises(MXNetError, match="fc_weight"):
        net.bind(mx.cpu(), [good["data"], good["fc_weight"]])
    with pytest.raises(MXNetError, match="not inputs"):
        net.simple_bind(mx.cpu(), dta=(2, 4))
    with pytest.raises(MXNetError, match="cannot infer"):
        net.simple_bind(mx.cpu())
    with pytest.raises(TypeError, match="Context"):
        net.simple_bind("cpu", data=(2, 4))


def test_forward_kwargs_and_dicts():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 4))
    assert ex.grad_arrays == [None, None, None]
    assert set(ex.arg_dict) == {"data", "fc_weight", "fc_bias"}
    ex.arg_dict["fc_weight"][:] = 1.0
    out = ex.forward(data=np.ones((2, 4), np.float32))
    np.testing.assert_allclose(out[0].asnumpy(), 4.0)
    assert ex.output_dict["fc_output"] is ex.outputs[0]
    with pytest.raises(MXNetError, match="not an argument"):
        ex.forward(dat=np.ones((2, 4)))
    with pytest.raises(MXNetError, match="without gradients"):
        ex.backward()


def test_copy_params_from_and_monitor():
    net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                  name="fc"), act_type="relu", name="act")
    ex = net.simple_bind(mx.cpu(), data=(2, 4))
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    ex.copy_params_from({"fc_weight": mx.nd.array(w)})
    np.testing.assert_array_equal(ex.arg_dict["fc_weight"].asnumpy(), w)
    with pytest.raises(ValueError, match="nope"):
        ex.copy_params_from({"nope": mx.nd.zeros((1,))})
    ex.copy_params_from({"nope": mx.nd.zeros((1,))}, allow_extra_params=True)
    seen = {}
    ex.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy()))
    ex.forward(data=np.ones((2, 4), np.float32))
    assert set(seen) == {"fc_output", "act_output"}
    np.testing.assert_allclose(seen["act_output"], np.maximum(w.sum(1), 0)[None].repeat(2, 0),
                               rtol=1e-6)


def test_reshape_shares_parameters():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                     name="fc"), name="out")
    ex = net.simple_bind(mx.cpu(), data=(8, 4))
    ex.arg_dict["fc_weight"][:] = 0.5
    small = ex.reshape(data=(2, 4), out_label=(2,))
    assert small.arg_dict["data"].shape == (2, 4)
    assert small.arg_dict["fc_weight"] is ex.arg_dict["fc_weight"]
    out = small.forward(data=np.ones((2, 4), np.float32))[0].asnumpy()
    np.testing.assert_allclose(out, 1 / 3, rtol=1e-6)
    with pytest.raises(MXNetError, match="allow_up_sizing"):
        ex.reshape(data=(16, 4), out_label=(16,))
    big = ex.reshape(allow_up_sizing=True, data=(16, 4), out_label=(16,))
    assert big.outputs[0].shape == (16, 3)


def test_simple_bind_type_dict():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = net.simple_bind(mx.cpu(), type_dict={"data": "float64"}, data=(2, 4))
    assert ex.arg_dict["fc_weight"].dtype == np.float64
    assert ex.outputs[0].dtype == np.float64


def test_shared_exec_reuses_parameters_and_storage():
    net = mx.sym.SoftmaxOutput(mx.sym.Activation(mx.sym.FullyConnected(
        mx.sym.Variable("data"), num_hidden=16, name="fc"), act_type="relu"), name="out")
    big = net.simple_bind(mx.cpu(), data=(8, 4))
    big.arg_dict["fc_weight"][:] = 0.25
    small = net.simple_bind(mx.cpu(), data=(4, 4), shared_exec=big,
                            shared_arg_names=["fc_weight", "fc_bias"])
    assert small.arg_dict["fc_weight"] is big.arg_dict["fc_weight"]
    assert small.grad_dict["fc_weight"] is big.grad_dict["fc_weight"]
    assert small.arg_dict["data"] is not big.arg_dict["data"]
    out = small.forward(data=np.ones((4, 4), np.float32))[0].asnumpy()
    np.testing.assert_allclose(out, 1 / 16, rtol=1e-6)
    with pytest.raises(TypeError, match="Executor"):
        net.simple_bind(mx.cpu(), data=(4, 4), shared_exec="nope")
