"""Executors over symbols holding mx.sym.contrib.boolean_mask, a
dynamic-shape operator: forward, backward with every grad_req and the
-symbol.json, against what MXNet 1.9.1's executor computes
(tests/data/boolean_mask_reference.npz, make_boolean_mask_reference.py)."""
import json
from pathlib import Path

import numpy as np
import pytest

import mx

REF = np.load(Path(__file__).resolve().parent / "data" / "boolean_mask_reference.npz")
D, W, B = REF["fc.d"], REF["fc.w"], REF["fc.b"]


def _fc():
    with mx.name.NameManager():
        return mx.sym.FullyConnected(mx.sym.contrib.boolean_mask(mx.sym.var("d"), mx.sym.var("i")),
                                     num_hidden=3, name="fc")


def _fc_grads():
    return {"d": mx.nd.zeros((5, 4)), "fc_weight": mx.nd.ones((3, 4)),
            "fc_bias": mx.nd.zeros((3,))}


FC_REQS = {"d": "write", "i": "null", "fc_weight": "add", "fc_bias": "write"}


def _check_fc_pass(ex, grads, p):
    out = ex.outputs[0]
    np.testing.assert_allclose(out.asnumpy(), REF[f"fc.{p}.out"], rtol=1e-5, atol=1e-6)
    ex.backward(mx.nd.array(REF[f"fc.{p}.ograd"]))
    for name in ("d", "fc_weight", "fc_bias"):
        np.testing.assert_allclose(grads[name].asnumpy(), REF[f"fc.{p}.{name}_grad"],
                                   rtol=1e-5, atol=1e-5, err_msg=name)


def test_symbol_json_is_mxnets():
    ours, theirs = json.loads(_fc().tojson()), json.loads(str(REF["json"]))
    assert ours["nodes"] == theirs["nodes"] and ours["heads"] == theirs["heads"]
    loaded = mx.sym.load_json(str(REF["json"]))
    assert loaded.get_internals().list_outputs()[2] == "boolean_mask0_output"


def test_bind_forward_backward_matches_mxnet():
    grads = _fc_grads()
    for p in range(2):
        ex = _fc().bind(mx.cpu(), {"d": mx.nd.array(D), "i": mx.nd.array(REF[f"fc.{p}.mask"]),
                                   "fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)},
                        args_grad=grads, grad_req=FC_REQS)
        ex.forward(is_train=True)
        _check_fc_pass(ex, grads, p)


def test_one_executor_follows_the_mask_between_passes():
    # MXNet 1.9.1 keeps its first pass's output shape here; ours follows the
    # mask, giving what a fresh executor per pass gives in MXNet.
    grads = _fc_grads()
    ex = _fc().simple_bind(mx.cpu(), grad_req=FC_REQS, d=(5, 4), i=(5,))
    for name, arr in grads.items():
        arr.copyto(ex.grad_dict[name])
    ex.copy_params_from({"d": mx.nd.array(D), "fc_weight": mx.nd.array(W),
                         "fc_bias": mx.nd.array(B)})
    for p in range(2):
        ex.forward(is_train=True, i=mx.nd.array(REF[f"fc.{p}.mask"]))
        _check_fc_pass(ex, ex.grad_dict, p)
    assert ex.memory_plan["num_storages"] == 0


@pytest.mark.parametrize("p", [0, 1])
def test_a_graph_after_the_mask_sees_its_rows(p):
    with mx.name.NameManager():
        total = mx.sym.sum(mx.sym.contrib.boolean_mask(mx.sym.var("d"), mx.sym.var("i")) * 2)
    ex = total.bind(mx.cpu(), {"d": mx.nd.array(D), "i": mx.nd.array(REF[f"sum.{p}.mask"])})
    out = ex.forward()[0]
    np.testing.assert_allclose(out.asnumpy(), REF[f"sum.{p}.out"], rtol=1e-5)


def test_reshape_rebinds_for_new_input_shapes():
    with mx.name.NameManager():
        total = mx.sym.sum(mx.sym.contrib.boolean_mask(mx.sym.var("d"), mx.sym.var("i")))
    ex = total.simple_bind(mx.cpu(), d=(3, 2), i=(3,))
    bigger = ex.reshape(d=(4, 2), i=(4,), allow_up_sizing=True)
    bigger.arg_dict["d"][:] = np.arange(8).reshape(4, 2)
    bigger.arg_dict["i"][:] = np.array([0, 1, 0, 1])
    assert bigger.forward()[0].asscalar() == 2 + 3 + 6 + 7


def test_aux_states_and_training_mode_as_imperative():
    # BatchNorm after the mask: its moving averages move in training only,
    # as the same operators called through mx.nd move them.
    rng = np.random.default_rng(3)
    x, mask = rng.normal(size=(6, 3)).astype("float32"), np.array([1, 1, 0, 1, 0, 1], "float32")
    with mx.name.NameManager():
        net = mx.sym.BatchNorm(mx.sym.contrib.boolean_mask(mx.sym.var("x"), mx.sym.var("m")),
                               name="bn", fix_gamma=False)
    ex = net.simple_bind(mx.cpu(), grad_req="null", x=(6, 3), m=(6,))
    ex.copy_params_from({"x": mx.nd.array(x), "m": mx.nd.array(mask),
                         "bn_gamma": mx.nd.ones(3), "bn_beta": mx.nd.zeros(3)})
    ex.aux_dict["bn_moving_var"][:] = 1
    mean, var = mx.nd.zeros(3), mx.nd.ones(3)
    with mx.autograd.train_mode():
        want = mx.nd.BatchNorm(mx.nd.contrib.boolean_mask(mx.nd.array(x), mx.nd.array(mask)),
                               mx.nd.ones(3), mx.nd.zeros(3), mean, var, fix_gamma=False)
    got = ex.forward(is_train=True)[0]
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), mean.asnumpy(),
                               rtol=1e-6)
    before = ex.aux_dict["bn_moving_mean"].asnumpy()
    ex.forward(is_train=False)
    np.testing.assert_array_equal(ex.aux_dict["bn_moving_mean"].asnumpy(), before)


def test_monitor_sees_every_node():
    seen = []
    ex = _fc().bind(mx.cpu(), {"d": mx.nd.array(D), "i": mx.nd.array(REF["fc.0.mask"]),
                               "fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)})
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    ex.forward()
    assert seen == [("boolean_mask0_output", (3, 4)), ("fc_output", (3, 3))]


def test_errors_name_what_is_wrong():
    grads = _fc_grads()
    ex = _fc().bind(mx.cpu(), {"d": mx.nd.array(D), "i": mx.nd.array(REF["fc.0.mask"]),
                               "fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)},
                    args_grad=grads, grad_req=FC_REQS)
    with pytest.raises(mx.base.MXNetError, match="run forward"):
        ex.backward(mx.nd.ones((3, 3)))
    ex.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match="head gradient is required"):
        ex.backward()
    with pytest.raises(mx.base.MXNetError, match=r"has shape \(2, 3\).*\(3, 3\)"):
        ex.backward(mx.nd.ones((2, 3)))
    with pytest.raises(mx.base.MXNetError, match="'index' has shape \\(4,\\)"):
        _fc().bind(mx.cpu(), {"d": mx.nd.array(D), "i": mx.nd.ones(4),
                              "fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)})
    with pytest.raises(mx.base.MXNetError, match="group2ctx is not supported.*boolean_mask"):
        _fc().simple_bind(mx.cpu(), group2ctx={"a": mx.cpu(1)}, d=(5, 4), i=(5,))
