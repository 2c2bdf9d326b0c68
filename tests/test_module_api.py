"""Module's API beyond the MXNet-reference runs: grad_req forms, input
gradients against NumPy, reshape on a batch of another size, fixed
parameters, set/get_params, optimizer states round trip, borrow_optimizer,
a monitor, and clear errors for wrong names and shapes."""
import logging

import numpy as np
import pytest

import mx


def softmax_net(hidden=3):
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, num_hidden=hidden, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def bound(grad_req="write", inputs_need_grad=False, batch=4, **kwargs):
    mod = mx.mod.Module(softmax_net(), **kwargs)
    mod.bind([("data", (batch, 5))], [("softmax_label", (batch,))],
             inputs_need_grad=inputs_need_grad, grad_req=grad_req)
    rng = np.random.default_rng(0)
    mod.init_params(arg_params={"fc_weight": mx.nd.array(rng.normal(size=(3, 5))),
                                "fc_bias": mx.nd.array(rng.normal(size=3))}, aux_params={})
    return mod


def batch_of(n=4, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = rng.integers(0, 3, n).astype(np.float32)
    return x, y, mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


def numpy_input_grad(mod, x, y):
    w = mod.get_params()[0]["fc_weight"].asnumpy()
    b = mod.get_params()[0]["fc_bias"].asnumpy()
    z = x @ w.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y.astype(int)] -= 1
    return p @ w, p


def test_input_grads_match_numpy():
    mod = bound(inputs_need_grad=True)
    x, y, batch = batch_of()
    mod.forward_backward(batch)
    dx, dz = numpy_input_grad(mod, x, y)
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), dx, rtol=1e-5, atol=1e-6)
    grad_w = mod._exec_group.grad_arrays[0][0].asnumpy()
    np.testing.assert_allclose(grad_w, dz.T @ x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("grad_req", ["add", ["null", "add", "add", "null"],
                                      {"fc_weight": "add"}])
def test_grad_req_add_accumulates(grad_req):
    mod = bound(grad_req=grad_req)
    assert mod._exec_group.grad_req["fc_weight"] == "add"
    _, _, batch = batch_of()
    mod.forward_backward(batch)
    once = mod._exec_group.grad_arrays[0][0].asnumpy().copy()
    mod.forward_backward(batch)
    np.testing.assert_allclose(mod._exec_group.grad_arrays[0][0].asnumpy(), 2 * once,
                               rtol=1e-5)


def test_fixed_params_get_no_gradient_and_stay():
    mod = bound(fixed_param_names=["fc_weight"])
    assert mod._exec_group.grad_req["fc_weight"] == "null"
    before = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0})
    _, _, batch = batch_of()
    mod.forward_backward(batch)
    mod.update()
    arg = mod.get_params()[0]
    np.testing.assert_array_equal(arg["fc_weight"].asnumpy(), before)
    assert not np.allclose(arg["fc_bias"].asnumpy(), bound().get_params()[0]["fc_bias"]
                           .asnumpy())


def test_forward_with_another_batch_size_reshapes():
    mod = bound()
    x, _, _ = batch_of(n=7)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    assert mod.data_shapes[0].shape == (7, 5)
    assert mod.output_shapes == [("softmax_output", (7, 3))]
    w = mod.get_params()[0]["fc_weight"].asnumpy()
    b = mod.get_params()[0]["fc_bias"].asnumpy()
    z = x @ w.T + b
    want = np.exp(z - z.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_set_params_and_save_load_params(tmp_path):
    mod = bound()
    new = {"fc_weight": mx.nd.ones((3, 5)), "fc_bias": mx.nd.zeros(3)}
    mod.set_params(new, {})
    np.testing.assert_array_equal(mod.get_params()[0]["fc_weight"].asnumpy(), 1)
    mod.save_params(str(tmp_path / "p.params"))
    other = bound()
    other.load_params(str(tmp_path / "p.params"))
    np.testing.assert_array_equal(other.get_params()[0]["fc_weight"].asnumpy(), 1)
    with pytest.raises(RuntimeError, match="fc_bias is not presented"):
        mod.set_params({"fc_weight": mx.nd.ones((3, 5))}, {})
    mod.set_params(dict(new, extra=mx.nd.ones(2)), {})       # ignored, as in MXNet


def test_set_params_allow_missing_copies_only_the_given_ones():
    mod = bound()
    bias = mod.get_params()[0]["fc_bias"].asnumpy()
    mod.set_params({"fc_weight": mx.nd.ones((3, 5))}, {}, allow_missing=True)
    np.testing.assert_array_equal(mod.get_params()[0]["fc_weight"].asnumpy(), 1)
    np.testing.assert_array_equal(mod.get_params()[0]["fc_bias"].asnumpy(), bias)
    with pytest.warns(UserWarning, match="set_params call ignored"):
        mod.set_params({"fc_weight": mx.nd.zeros((3, 5))}, {}, allow_missing=True,
                       force_init=False)
    np.testing.assert_array_equal(mod.get_params()[0]["fc_weight"].asnumpy(), 1)


def test_bucketing_set_params_allow_missing():
    def sym_gen(key):
        return softmax_net(), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(arg_params={"fc_weight": mx.nd.zeros((3, 5)), "fc_bias": mx.nd.ones(3)},
                    aux_params={})
    mod.set_params({"fc_weight": mx.nd.ones((3, 5))}, {}, allow_missing=True)
    args = mod.get_params()[0]
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(), 1)
    np.testing.assert_array_equal(args["fc_bias"].asnumpy(), 1)


def test_optimizer_states_round_trip_and_borrow(tmp_path):
    mod = bound()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                         "momentum": 0.9})
    _, _, batch = batch_of()
    mod.forward_backward(batch)
    mod.update()
    mod.save_optimizer_states(str(tmp_path / "s.states"))
    other = bound()
    other.set_params(*mod.get_params())
    other.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                           "momentum": 0.9})
    other.load_optimizer_states(str(tmp_path / "s.states"))
    for m in (mod, other):
        m.forward_backward(batch)
        m.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc_weight"].asnumpy(),
                                  other.get_params()[0]["fc_weight"].asnumpy())
    borrower = mx.mod.Module(softmax_net())
    borrower.bind([("data", (4, 5))], [("softmax_label", (4,))], shared_module=mod)
    assert borrower.optimizer_initialized and borrower._updater is mod._updater
    assert borrower._exec_group.param_arrays[0][0] is mod._exec_group.param_arrays[0][0]


def test_monitor_sees_every_output():
    mod = bound()
    mon = mx.monitor.Monitor(1, pattern=".*")
    mod.install_monitor(mon)
    _, _, batch = batch_of()
    mon.tic()
    mod.forward(batch, is_train=False)
    names = {name for _, name, _ in mon.toc()}
    assert {"fc_output", "softmax_output"} <= names


def test_wrong_names_and_shapes_are_named():
    with pytest.raises(ValueError, match="'image' is not found"):
        mx.mod.Module(softmax_net(), data_names=["image"])
    mod = mx.mod.Module(softmax_net())
    with pytest.raises(ValueError, match="data_shapes don't match names"):
        mod.bind([("image", (4, 5))], [("softmax_label", (4,))])
    mod = bound()
    with pytest.raises(mx.base.MXNetError, match="fc_weight"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((4, 6))]), is_train=False)
    with pytest.raises(ValueError, match="2 data arrays"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((4, 5)), mx.nd.ones((4, 5))]))
    with pytest.raises(RuntimeError, match="init_optimizer"):
        mod.update()
    with pytest.raises(ValueError, match="too small to split"):
        two = mx.mod.Module(softmax_net(), context=[mx.cpu(0), mx.cpu(1)])
        two.bind([("data", (1, 5))], [("softmax_label", (1,))])
    with pytest.raises(RuntimeError, match="call bind"):
        mx.mod.Module(softmax_net()).init_params()
    with pytest.raises(ValueError, match="num_epoch"):
        mod.fit(mx.io.NDArrayIter(np.ones((4, 5)), np.zeros(4), batch_size=4))


def test_fit_logs_epochs_and_calls_callbacks(caplog):
    x = np.random.default_rng(0).normal(size=(32, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    mod = mx.mod.Module(softmax_net(hidden=2))
    seen, epochs = [], []
    with caplog.at_level(logging.INFO):
        mod.fit(it, eval_data=it, num_epoch=2, optimizer_params={"learning_rate": 0.5},
                batch_end_callback=lambda p: seen.append((p.epoch, p.nbatch)),
                epoch_end_callback=lambda e, s, a, x: epochs.append((e, sorted(a))))
    assert seen == [(e, b) for e in range(2) for b in range(4)]
    assert epochs == [(0, ["fc_bias", "fc_weight"]), (1, ["fc_bias", "fc_weight"])]
    text = caplog.text
    assert "Epoch[1] Train-accuracy=" in text and "Epoch[1] Validation-accuracy=" in text


def test_compare_module_fit_quick_runs_without_references():
    """benchmarks/compare_module_fit.py never rots (no speed asserted)."""
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "benchmarks/compare_module_fit.py", "--quick",
                          "--models", "mlp", "--mxnet-python", "", "--torch-python", ""],
                         cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "MLP 784-128-64-10, batch 128" in out.stdout and "agree" in out.stdout
