"""Symbol construction, naming, listing, attributes and inference, against
what MXNet 1.x returns for the same calls."""
import numpy as np
import pytest

import mx
from mx_engine.base import MXNetError


def mlp():
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data=net, name="fc1", num_hidden=128)
    net = mx.sym.Activation(data=net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(data=net, name="fc2", num_hidden=10)
    return mx.sym.SoftmaxOutput(data=net, name="out")


def test_mlp_lists_as_mxnet():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight",
                                    "fc2_bias", "out_label"]
    assert net.list_outputs() == ["out_output"]
    assert net.list_auxiliary_states() == []
    assert net.list_inputs() == net.list_arguments()
    assert net.name == "out"
    assert repr(net) == "<Symbol out>"


def test_infer_shape_fills_weights_and_label():
    arg, out, aux = mlp().infer_shape(data=(100, 100))
    assert arg == [(100, 100), (128, 100), (128,), (10, 128), (10,), (100,)]
    assert out == [(100, 10)]
    assert aux == []


def test_infer_shape_positional_and_incomplete():
    net = mlp()
    arg, out, _ = net.infer_shape((32, 20))
    assert arg[1] == (128, 20) and out == [(32, 10)]
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    c = mx.sym.broadcast_add(a, b)
    assert c.infer_shape(a=(2, 3)) == (None, None, None)
    arg, out, _ = c.infer_shape_partial(a=(2, 3))
    assert arg == [(2, 3), ()] and out == [()]


def test_infer_shape_error_names_node_and_shapes():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("w")
    fc = mx.sym.FullyConnected(data=data, weight=w, num_hidden=4, no_bias=True, name="fc")
    with pytest.raises(MXNetError) as err:
        fc.infer_shape(data=(2, 3), w=(4, 5))
    msg = str(err.value)
    assert "fc" in msg and "FullyConnected" in msg and "(2, 3)" in msg and "(4, 5)" in msg


def test_infer_shape_unknown_name():
    with pytest.raises(MXNetError, match="not an input"):
        mlp().infer_shape(dta=(1, 2))


def test_infer_type():
    arg, out, aux = mlp().infer_type(data="float64")
    assert arg == [np.float64] * 6 and out == [np.float64] and aux == []


def test_auto_names_and_prefix():
    a = mx.sym.Variable("a")
    with mx.name.NameManager():
        s1 = mx.sym.relu(a)
        s2 = mx.sym.relu(a)
        assert (s1.name, s2.name) == ("relu0", "relu1")
    with mx.name.Prefix("net_"):
        s3 = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
        s4 = mx.sym.FullyConnected(a, num_hidden=2)
    assert s3.name == "net_fc"
    assert s4.name.startswith("net_fullyconnected")
    assert s3.list_arguments() == ["a", "net_fc_weight", "net_fc_bias"]


def test_aux_states_batchnorm():
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn")
    assert bn.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]
    assert bn.list_inputs() == ["data", "bn_gamma", "bn_beta", "bn_moving_mean",
                                "bn_moving_var"]


def test_compose_by_calling():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    x = mx.sym.Variable("x")
    y = mx.sym.relu(x, name="pre")
    composed = net(data=y)
    assert composed.list_arguments() == ["x", "fc_weight", "fc_bias"]
    # the original is unchanged
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias"]
    positional = net(y)
    assert positional.list_arguments() == ["x", "fc_weight", "fc_bias"]


def test_group_indexing_internals_children():
    a = mx.sym.Variable("a")
    fc = mx.sym.FullyConnected(a, num_hidden=3, name="fc")
    act = mx.sym.Activation(fc, act_type="tanh", name="act")
    g = mx.sym.Group([fc, act])
    assert g.list_outputs() == ["fc_output", "act_output"]
    assert g.name is None
    assert g[1].name == "act"
    assert g["fc_output"].name == "fc"
    internals = act.get_internals()
    assert internals.list_outputs() == ["a", "fc_weight", "fc_bias", "fc_output", "act_output"]
    assert internals["fc_output"].list_arguments() == ["a", "fc_weight", "fc_bias"]
    assert act.get_children().list_outputs() == ["fc_output"]
    assert a.get_children() is None
    with pytest.raises(IndexError):
        g[2]


def test_multi_output_split():
    parts = mx.sym.SliceChannel(mx.sym.Variable("x"), num_outputs=3, name="sp")
    assert parts.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    assert len(parts) == 3
    _, out, _ = parts.infer_shape(x=(2, 6))
    assert out == [(2, 2)] * 3


def test_attributes():
    with mx.AttrScope(ctx_group="dev1", group="4"):
        w = mx.sym.Variable("w", lr_mult=2.0, wd_mult=0.5, shape=(3, 4), dtype="float16",
                            init="zeros", __extra__="x")
        fc = mx.sym.FullyConnected(mx.sym.Variable("d"), weight=w, num_hidden=3,
                                   no_bias=True, name="fc")
    assert w.attr("lr_mult") == "2.0" and w.attr("__lr_mult__") == "2.0"
    assert w.attr("wd_mult") == "0.5"
    assert w.attr("__shape__") == "(3, 4)"
    assert w.attr("__dtype__") == "2"
    assert w.attr("__init__") == "zeros"
    assert w.attr("__extra__") == "x"
    assert w.attr("ctx_group") == "dev1"
    assert fc.attr("ctx_group") == "dev1" and fc.attr("group") == "4"
    assert fc.attr("num_hidden") == "3"
    d = fc.attr_dict()
    assert d["fc"]["num_hidden"] == "3" and d["w"]["__lr_mult__"] == "2.0"
    fc._set_attr(mood="calm")
    assert fc.attr("mood") == "calm"
    assert fc.list_attr()["mood"] == "calm"
    with pytest.raises(ValueError):
        mx.sym.Variable("v", foo="bar")
    with pytest.raises(ValueError):
        mx.AttrScope(x=1)


def test_auto_variables_inherit_node_attrs():
    fc = mx.sym.FullyConnected(mx.sym.Variable("d"), num_hidden=7, name="fc")
    assert fc.get_internals()["fc_weight"].attr("num_hidden") == "7"


def test_variable_shape_hint_used():
    x = mx.sym.Variable("x", shape=(4, 5))
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    arg, out, _ = fc.infer_shape()
    assert arg == [(4, 5), (2, 5), (2,)] and out == [(4, 2)]


def test_arithmetic_ops():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    x = (a + b) * 2 - 1
    y = 1 - a / b
    z = mx.sym.maximum(a ** 2, 3)
    an, bn = np.array([[1.0, 2.0]], np.float32), np.array([[4.0, 5.0]], np.float32)
    args = {"a": mx.nd.array(an), "b": mx.nd.array(bn)}
    np.testing.assert_allclose(x.eval(**args)[0].asnumpy(), (an + bn) * 2 - 1)
    np.testing.assert_allclose(y.eval(**args)[0].asnumpy(), 1 - an / bn, rtol=1e-6)
    np.testing.assert_allclose(z.eval(a=args["a"])[0].asnumpy(), np.maximum(an ** 2, 3))
    np.testing.assert_allclose((-a).eval(a=args["a"])[0].asnumpy(), -an)
    np.testing.assert_allclose((a > b).eval(**args)[0].asnumpy(), (an > bn).astype(np.float32))


def test_fluent_methods():
    x = mx.sym.Variable("x")
    s = x.reshape((2, 3)).sum(axis=1)
    xn = np.arange(6, dtype=np.float32)
    np.testing.assert_allclose(s.eval(x=mx.nd.array(xn))[0].asnumpy(), xn.reshape(2, 3).sum(1))
    with pytest.raises(AttributeError):
        x.no_such_method


def test_op_function_errors():
    x = mx.sym.Variable("x")
    with pytest.raises(TypeError, match="unknown input"):
        mx.sym.FullyConnected(x, num_hidden=2, wieght=x)
    with pytest.raises(MXNetError, match="num_hiden|unknown argument"):
        mx.sym.FullyConnected(x, num_hiden=2)
    with pytest.raises(TypeError, match="must be a Symbol"):
        mx.sym.relu(np.zeros(3))
    with pytest.raises(AttributeError):
        mx.sym.NoSuchOperator


def test_variadic_concat():
    a, b, c = (mx.sym.Variable(n) for n in "abc")
    cat = mx.sym.Concat(a, b, c, dim=1, name="cat")
    assert cat.list_arguments() == ["a", "b", "c"]
    assert cat.attr("num_args") == "3"
    _, out, _ = cat.infer_shape(a=(2, 1), b=(2, 2), c=(2, 3))
    assert out == [(2, 6)]


def test_debug_str_lists_nodes():
    text = mlp().debug_str()
    assert "Op:FullyConnected, Name=fc1" in text
    assert "Variable:fc1_weight" in text
    assert "num_hidden=128" in text


def test_symbol_has_no_truth_value():
    with pytest.raises(NotImplementedError):
        bool(mx.sym.Variable("x"))


def test_op_function_docstring():
    assert "num_hidden" in mx.sym.FullyConnected.__doc__
    assert "FullyConnected" in dir(mx.sym)
