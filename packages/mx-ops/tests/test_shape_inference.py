"""Partial shape and type inference (mx_ops.core.partial_infer and the rules of
nn_infer, loss_infer, elemwise_infer, tensor_infer): unknown weights,
labels and statistics are filled as MXNet 1.x fills them (expected shapes
written by hand from MXNet's FInferShape), unknown dimensions (0) carry
through, and inconsistencies raise naming the operator, the argument and
the shapes.  test_shape_inference_property.py checks the rules against the
forward inference on random calls."""
import numpy as np
import pytest

from mx_engine.base import MXNetError
from mx_ops import get, infer_shapes, infer_types, registry
from mx_ops.core._params import ParamError, Param
from mx_ops.core.partial_infer import merge_shape, set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext.operator import OperatorProperty, register_op_property


def shapes(name, ins, outs=None, **params):
    op = get(name)
    return infer_shapes(op, op.parse_params(params), ins, outs)


def types(name, ins, outs=None, **params):
    op = get(name)
    return infer_types(op, op.parse_params(params), ins, outs)


# --- the mechanism ---------------------------------------------------------------------------
def test_merge_shape():
    assert merge_shape(None, (2, 0)) == (2, 0)
    assert merge_shape((0, 3), (2, 0)) == (2, 3)
    with pytest.raises(ValueError):
        merge_shape((2, 3), (2, 4))
    with pytest.raises(ValueError):
        merge_shape((2, 3), (2, 3, 1))


def test_default_is_the_forward_once_inputs_are_known():
    # sum has no rule: nothing before its input is known, the forward after.
    assert shapes("sum", [None], axis=(1,)) == ([None], [None])
    assert shapes("sum", [(2, 0, 4)], axis=(1,)) == ([(2, 0, 4)], [None])
    assert shapes("sum", [(2, 3, 4)], axis=(1,)) == ([(2, 3, 4)], [(2, 4)])
    with pytest.raises(ShapeError, match=r"sum: output 'output' has shape \(2, 5\), expected "
                                         r"\(2, 4\)"):
        shapes("sum", [(2, 3, 4)], [(2, 5)], axis=(1,))


def test_operators_without_inputs_and_names_accepted():
    assert shapes("_zeros", [], shape=(2, 3)) == ([], [(2, 3)])
    assert types("_zeros", [], shape=(2, 3), dtype="int32") == ([], ["int32"])
    op = get("FullyConnected")
    assert infer_types("FullyConnected", op.parse_params({"num_hidden": 3}),
                       [np.float64, None, None]) == (["float64"] * 3, ["float64"])


def test_bad_calls():
    with pytest.raises(MXNetError, match="2 input shapes given for its 3 inputs"):
        shapes("FullyConnected", [None, None], num_hidden=3)
    with pytest.raises(MXNetError, match="2 output shapes given for its 1 outputs"):
        shapes("relu", [None], [None, None])
    with pytest.raises(ShapeError, match="dimensions are >= 0, with 0 for a dimension not "
                                         "known yet"):
        shapes("relu", [(-1, 3)])


def test_setters_and_a_rule_returning_new_lists():
    registry.register(registry.OpDef(
        "_test_pi_twice", arguments=("data",), infer_shape=lambda p, s: [tuple(s[0]) * 2],
        infer_type=lambda p, t: [t[0]], compute={}))
    try:
        def rule(params, ins, outs):        # the input back from the output's first half
            if outs[0] is not None:
                return [outs[0][:len(outs[0]) // 2]], [outs[0]]
            return ins, outs
        set_infer_shape_partial("_test_pi_twice", rule)
        set_infer_type_partial("_test_pi_twice", lambda p, ins, outs: ([outs[0]], outs))
        assert shapes("_test_pi_twice", [None], [(2, 3, 2, 3)]) == ([(2, 3)], [(2, 3, 2, 3)])
        with pytest.raises(ShapeError, match=r"output 'output' has shape \(2, 3, 2, 4\), "
                                             r"expected \(2, 3, 2, 3\)"):
            shapes("_test_pi_twice", [None], [(2, 3, 2, 4)])
        assert types("_test_pi_twice", [None], ["int8"]) == (["int8"], ["int8"])
    finally:
        registry._unregister("_test_pi_twice")


def test_results_are_fixed_points():
    ins, outs = shapes("Convolution", [(0, 4, 9, 9), None, None], kernel=(3, 3),
                       num_filter=6, num_group=2)
    assert (ins, outs) == ([(0, 4, 9, 9), (6, 2, 3, 3), (6,)], [(0, 6, 7, 7)])
    assert shapes("Convolution", ins, outs, kernel=(3, 3), num_filter=6,
                  num_group=2) == (ins, outs)


# --- default types ----------------------------------------------------------------------------
def test_default_types_take_a_known_input_or_the_output():
    assert types("elemwise_add", [None, "float16"]) == (["float16"] * 2, ["float16"])
    assert types("FullyConnected", [None, None, None], ["float64"],
                 num_hidden=2) == (["float64"] * 3, ["float64"])
    assert types("exp", [None]) == ([None], [None])
    assert types("SoftmaxOutput", ["float32", None]) == (["float32"] * 2, ["float32"])


def test_default_types_drop_a_guess_the_operator_refuses():
    # dot takes floats only: rhs int32 cannot lend its dtype to lhs.
    assert types("dot", [None, "int32"]) == ([None, "int32"], [None])
    with pytest.raises(TypeInferenceError, match="dot: argument 'rhs' has dtype int32"):
        types("dot", ["float32", "int32"])


def test_default_types_check_the_output():
    with pytest.raises(TypeInferenceError, match=r"elemwise_add: output 'output' has dtype "
                                                 r"int32, expected float32"):
        types("elemwise_add", ["float32", None], ["int32"])


# --- FullyConnected -----------------------------------------------------------------------
def test_fully_connected_fills_weight_and_bias():
    assert shapes("FullyConnected", [(100, 784), None, None], num_hidden=10) == (
        [(100, 784), (10, 784), (10,)], [(100, 10)])
    assert shapes("FullyConnected", [(8, 3, 4, 5), None], num_hidden=7, no_bias=True) == (
        [(8, 3, 4, 5), (7, 60)], [(8, 7)])


def test_fully_connected_without_flatten():
    assert shapes("FullyConnected", [(2, 5, 6), None, None], num_hidden=3, flatten=False) == (
        [(2, 5, 6), (3, 6), (3,)], [(2, 5, 3)])


def test_fully_connected_unknown_batch_and_back_from_the_output():
    assert shapes("FullyConnected", [(0, 784), None, None], num_hidden=10) == (
        [(0, 784), (10, 784), (10,)], [(0, 10)])
    assert shapes("FullyConnected", [(0, 784), None, None], [(32, 10)], num_hidden=10)[0][0] \
        == (32, 784)
    # An unknown inner dimension leaves the weight's input size unknown.
    assert shapes("FullyConnected", [(4, 0, 3), None, None], num_hidden=2)[0][1] == (2, 0)
    assert shapes("FullyConnected", [None, (10, 784), None], num_hidden=10) == (
        [None, (10, 784), None], [None])


def test_fully_connected_inconsistencies():
    with pytest.raises(ShapeError, match=r"FullyConnected: argument 'weight' has shape "
                                         r"\(10, 5\), expected \(10, 784\)"):
        shapes("FullyConnected", [(100, 784), (10, 5), None], num_hidden=10)
    with pytest.raises(ShapeError, match=r"argument 'bias' has shape \(5,\), expected \(10,\)"):
        shapes("FullyConnected", [(100, 784), None, (5,)], num_hidden=10)
    with pytest.raises(ShapeError, match=r"output 'output' has shape \(100, 20\), expected "
                                         r"\(100, 10\)"):
        shapes("FullyConnected", [(100, 784), None, None], [(100, 20)], num_hidden=10)
    with pytest.raises(ShapeError, match=r"output 'output' has shape \(32, 10\), expected "
                                         r"\(100, 10\) \(for 'data' \(100, 784\)\)"):
        shapes("FullyConnected", [(100, 784), None, None], [(32, 10)], num_hidden=10)


# --- Convolution / Deconvolution -------------------------------------------------------------
def test_convolution_2d_fills_weight_bias_and_output():
    ins, outs = shapes("Convolution", [(2, 4, 10, 12), None, None], kernel=(3, 5),
                       stride=(2, 1), dilate=(1, 2), pad=(1, 2), num_filter=6, num_group=2)
    assert ins[1:] == [(6, 2, 3, 5), (6,)]
    # (10 + 2 - 3) // 2 + 1 = 5; (12 + 4 - 9) // 1 + 1 = 8
    assert outs == [(2, 6, 5, 8)]


def test_convolution_1d_and_no_bias():
    assert shapes("Convolution", [(3, 2, 9), None], kernel=(4,), num_filter=5,
                  no_bias=True) == ([(3, 2, 9), (5, 2, 4)], [(3, 5, 6)])


def test_convolution_unknown_dims_and_back_inference():
    ins, outs = shapes("Convolution", [(0, 3, 0, 28), None, None], kernel=(3, 3),
                       num_filter=8, pad=(1, 1))
    assert ins[1] == (8, 3, 3, 3) and outs == [(0, 8, 0, 28)]
    # stride 1: the spatial sizes come back from the output, as does the batch.
    ins, _ = shapes("Convolution", [(0, 3, 0, 0), None, None], [(5, 8, 28, 30)],
                    kernel=(3, 3), num_filter=8, pad=(1, 0))
    assert ins[0] == (5, 3, 28, 32)
    # stride 2: only the batch.
    ins, _ = shapes("Convolution", [(0, 3, 0, 0), None, None], [(5, 8, 14, 14)],
                    kernel=(3, 3), stride=(2, 2), num_filter=8)
    assert ins[0] == (5, 3, 0, 0)


def test_convolution_errors():
    with pytest.raises(ShapeError, match=r"Convolution: argument 'weight' has shape "
                                         r"\(8, 3, 5, 5\), expected \(8, 3, 3, 3\)"):
        shapes("Convolution", [(1, 3, 8, 8), (8, 3, 5, 5), None], kernel=(3, 3), num_filter=8)
    with pytest.raises(ShapeError, match="channels are not divisible by num_group 2"):
        shapes("Convolution", [(0, 3, 8, 8), None, None], kernel=(3, 3), num_filter=8,
               num_group=2)
    with pytest.raises(ShapeError, match="larger than the padded input"):
        shapes("Convolution", [(0, 3, 2, 0), None, None], kernel=(3, 3), num_filter=8)
    with pytest.raises(ParamError, match="layout NHWC is not supported"):
        shapes("Convolution", [(1, 8, 8, 3), None, None], kernel=(3, 3), num_filter=8,
               layout="NHWC")


def test_convolution_back_inference_needs_a_possible_input():
    with pytest.raises(ShapeError, match="which no input gives"):
        shapes("Convolution", [(0, 3, 0, 0), None, None], [(1, 8, 1, 1)], kernel=(1, 1),
               pad=(2, 2), num_filter=8)


def test_deconvolution():
    ins, outs = shapes("Deconvolution", [(2, 4, 5, 6), None], kernel=(3, 3), stride=(2, 2),
                       pad=(1, 1), adj=(1, 0), num_filter=6, num_group=2)
    assert ins[1] == (4, 3, 3, 3)
    # 2 * (5 - 1) + 3 - 2 + 1 = 10; 2 * (6 - 1) + 3 - 2 + 0 = 11
    assert outs == [(2, 6, 10, 11)]
    ins, outs = shapes("Deconvolution", [(0, 4, 5, 0), None, None], kernel=(3, 3),
                       num_filter=6, no_bias=False)
    assert ins[1:] == [(4, 6, 3, 3), (6,)] and outs == [(0, 6, 7, 0)]
    assert shapes("Deconvolution", [(1, 4, 5, 5), None], kernel=(3, 3), stride=(2, 2),
                  num_filter=2, target_shape=(10, 10))[1] == [(1, 2, 10, 10)]
    # target_shape with an unknown size: the padding is unknown, so are the sizes.
    assert shapes("Deconvolution", [(1, 4, 5, 0), None], kernel=(3, 3), stride=(2, 2),
                  num_filter=2, target_shape=(10, 10))[1] == [(1, 2, 0, 0)]


# --- BatchNorm --------------------------------------------------------------------------------
def test_batch_norm_fills_gamma_beta_and_moving_stats():
    assert shapes("BatchNorm", [(0, 16, 7, 7)] + [None] * 4) == (
        [(0, 16, 7, 7)] + [(16,)] * 4, [(0, 16, 7, 7), (16,), (16,)])
    assert shapes("BatchNorm", [(4, 7, 3)] + [None] * 4, axis=-1)[0][1:] == [(3,)] * 4
    with pytest.raises(ShapeError, match=r"BatchNorm: auxiliary state 'moving_var' has shape "
                                         r"\(8,\), expected \(16,\)"):
        shapes("BatchNorm", [(2, 16), None, None, None, (8,)])
    with pytest.raises(ShapeError, match="out of range"):
        shapes("BatchNorm", [(2, 16)] + [None] * 4, axis=2)


def test_batch_norm_types():
    assert types("BatchNorm", ["float16"] + [None] * 4) == (
        ["float16"] + ["float32"] * 4, ["float16", "float32", "float32"])
    assert types("BatchNorm", [None] * 5, ["float64", None, None]) == (
        ["float64"] * 5, ["float64"] * 3)
    assert types("BatchNorm", [None, "float32"] + [None] * 3) == (
        [None, "float32", None, None, None], [None] * 3)
    with pytest.raises(TypeInferenceError, match=r"argument 'gamma' has dtype float16, "
                                                 r"expected float32 \(for 'data' of dtype "
                                                 r"float16\)"):
        types("BatchNorm", ["float16", "float16"] + [None] * 3)


# --- Embedding, LeakyReLU, Activation, Dropout, Pooling ---------------------------------------
def test_embedding():
    assert shapes("Embedding", [(4, 5), None], input_dim=100, output_dim=8) == (
        [(4, 5), (100, 8)], [(4, 5, 8)])
    assert shapes("Embedding", [(0, 5), None], input_dim=10, output_dim=3)[1] == [(0, 5, 3)]
    with pytest.raises(ShapeError, match=r"argument 'weight' has shape \(8, 100\), expected "
                                         r"\(100, 8\)"):
        shapes("Embedding", [(4,), (8, 100)], input_dim=100, output_dim=8)
    assert types("Embedding", ["int32", None], input_dim=2, output_dim=2,
                 dtype="float16") == (["int32", "float16"], ["float16"])
    assert types("Embedding", [None, None], input_dim=2, output_dim=2) == (
        [None, "float32"], ["float32"])
    with pytest.raises(TypeInferenceError, match="Embedding: argument 'weight' has dtype "
                                                 "float64, expected float32"):
        types("Embedding", ["int32", "float64"], input_dim=2, output_dim=2)


def test_leaky_relu():
    assert shapes("LeakyReLU", [(2, 5, 3), None], act_type="prelu") == (
        [(2, 5, 3), (5,)], [(2, 5, 3)])
    assert shapes("LeakyReLU", [(2, 5, 3), (1,)], act_type="prelu")[0][1] == (1,)
    assert shapes("LeakyReLU", [(0, 4)], act_type="rrelu")[1] == [(0, 4), (0, 4)]
    with pytest.raises(ShapeError, match=r"argument 'gamma' has shape \(3,\)"):
        shapes("LeakyReLU", [(2, 5, 3), (3,)], act_type="prelu")


def test_activation_softmax_and_unary_both_directions():
    assert shapes("Activation", [None], [(0, 3)], act_type="relu") == ([(0, 3)], [(0, 3)])
    assert shapes("softmax", [(2, 0)], [(0, 5)]) == ([(2, 5)], [(2, 5)])
    assert shapes("exp", [None], [(4,)]) == ([(4,)], [(4,)])
    assert shapes("_plus_scalar", [(3, 0)], scalar=1.0) == ([(3, 0)], [(3, 0)])
    assert shapes("smooth_l1", [None], [(2, 2)], scalar=1.0) == ([(2, 2)], [(2, 2)])
    with pytest.raises(ShapeError, match=r"log_softmax: output 'output' has shape \(3,\), "
                                         r"which differs from argument 'data' \(2,\)"):
        shapes("log_softmax", [(2,)], [(3,)])


def test_dropout_mask():
    assert shapes("Dropout", [(0, 3, 4)], axes=(1,)) == ([(0, 3, 4)], [(0, 3, 4), (0, 1, 4)])


def test_pooling_forward_with_unknown_dims():
    assert shapes("Pooling", [(0, 3, 8, 8)], kernel=(2, 2), stride=(2, 2)) == (
        [(0, 3, 8, 8)], [(0, 3, 4, 4)])
    assert shapes("Pooling", [(2, 3, 0, 8)], kernel=(3, 3), pad=(1, 1),
                  pooling_convention="full")[1] == [(2, 3, 0, 8)]
    assert shapes("Pooling", [(2, 3, 0, 0)], global_pool=True)[1] == [(2, 3, 1, 1)]
    assert shapes("Pooling", [(2, 3, 0)], kernel=(2,))[1] == [(2, 3, 0)]
    assert shapes("Pooling", [None], [(2, 3, 4, 4)], kernel=(2, 2)) == ([None], [(2, 3, 4, 4)])
    with pytest.raises(ShapeError, match="Pooling: argument 'data' must be 3-d"):
        shapes("Pooling", [(0, 3)], kernel=(2,))


# --- L2Normalization, LRN, UpSampling ---------------------------------------------------------
@pytest.mark.parametrize("mode, norm", [("instance", (0,)), ("channel", (0, 1, 5, 6)),
                                        ("spatial", (0, 4))])
def test_l2_normalization(mode, norm):
    assert shapes("L2Normalization", [(0, 4, 5, 6)], mode=mode)[1] == [(0, 4, 5, 6), norm]


def test_lrn_through_its_operator_property():
    assert shapes("LRN", [(0, 3, 8, 8)], nsize=3) == ([(0, 3, 8, 8)], [(0, 3, 8, 8)] * 2)
    assert shapes("LRN", [None], nsize=3) == ([None], [None, None])
    with pytest.raises(ShapeError, match="LRN: argument 'data' has shape"):
        shapes("LRN", [(0, 3, 8)], nsize=3)


def test_upsampling_unknown_batch():
    ins, outs = shapes("UpSampling", [(0, 2, 3, 3), (0, 5, 6, 6)], scale=2,
                       sample_type="nearest", num_args=2)
    assert outs == [(0, 7, 6, 6)]
    ins, outs = shapes("UpSampling", [(0, 2, 3, 3), (4, 5, 6, 6)], scale=2,
                       sample_type="nearest", num_args=2)
    assert ins == [(4, 2, 3, 3), (4, 5, 6, 6)] and outs == [(4, 7, 6, 6)]
    assert shapes("UpSampling", [(1, 2, 0, 3)], scale=2, sample_type="nearest",
                  num_args=1)[1] == [None]


# --- losses -----------------------------------------------------------------------------------
def test_softmax_output_label():
    assert shapes("SoftmaxOutput", [(100, 10), None]) == ([(100, 10), (100,)], [(100, 10)])
    assert shapes("SoftmaxOutput", [(0, 10), None])[0][1] == (0,)
    assert shapes("SoftmaxOutput", [(2, 3, 4), None], preserve_shape=True)[0][1] == (2, 3)
    # A label of the data's rank holds probabilities: shapes merge both ways.
    assert shapes("SoftmaxOutput", [(0, 10), (32, 0)])[0] == [(32, 10), (32, 10)]
    assert shapes("SoftmaxOutput", [(2, 5, 3, 4), None], multi_output=True)[0][1] == (2, 12)
    for label in [(2, 3, 4), (2, 1, 3, 4), (2, 12), (2, 5, 3, 4)]:
        assert shapes("SoftmaxOutput", [(2, 5, 3, 4), label],
                      multi_output=True)[0][1] == label
    with pytest.raises(ShapeError, match=r"SoftmaxOutput: argument 'label' has shape \(100, "
                                         r"3\), expected \(100, 10\) \(class indices"):
        shapes("SoftmaxOutput", [(100, 10, 3), (100, 3)])
    with pytest.raises(ShapeError, match="with multi_output=True"):
        shapes("SoftmaxOutput", [(2, 5, 3), (5, 3)], multi_output=True)


@pytest.mark.parametrize("name", ["LinearRegressionOutput", "LogisticRegressionOutput",
                                  "MAERegressionOutput"])
def test_regression_label(name):
    assert shapes(name, [(5, 1), None]) == ([(5, 1), (5,)], [(5, 1)])
    assert shapes(name, [(5, 3), None]) == ([(5, 3), (5, 3)], [(5, 3)])
    assert shapes(name, [(0, 3), (8, 3)]) == ([(8, 3), (8, 3)], [(8, 3)])
    assert shapes(name, [(4, 6), (4, 2, 3)])[1] == [(4, 6)]
    with pytest.raises(ShapeError, match=rf"{name}: argument 'label' has shape \(3, 6\), "
                                         r"which does not match 'data' \(4, 6\)"):
        shapes(name, [(4, 6), (3, 6)])
    with pytest.raises(ShapeError, match="does not match"):
        shapes(name, [(4, 6), (4, 5)])


def test_make_loss_and_block_grad_both_directions():
    assert shapes("MakeLoss", [None], [(3, 2)]) == ([(3, 2)], [(3, 2)])
    assert shapes("BlockGrad", [(0, 2)], [(3, 0)]) == ([(3, 2)], [(3, 2)])


def test_softmax_output_label_dtype():
    assert types("SoftmaxOutput", ["float64", None]) == (["float64"] * 2, ["float64"])


# --- elementwise ------------------------------------------------------------------------------
def test_elementwise_binary_both_directions():
    assert shapes("elemwise_add", [(3, 4), None]) == ([(3, 4), (3, 4)], [(3, 4)])
    assert shapes("elemwise_mul", [None, (0, 4)], [(3, 0)]) == ([(3, 4), (3, 4)], [(3, 4)])
    assert shapes("_maximum", [None, None], [(2,)]) == ([(2,), (2,)], [(2,)])
    with pytest.raises(ShapeError, match=r"elemwise_sub: argument 'rhs' has shape \(3, 5\), "
                                         r"which differs from argument 'lhs' \(3, 4\)"):
        shapes("elemwise_sub", [(3, 4), (3, 5)])


def test_broadcast_forward_with_unknown_dims():
    assert shapes("broadcast_add", [(0, 1, 4), (3, 1)]) == ([(0, 1, 4), (3, 1)], [(0, 3, 4)])
    assert shapes("broadcast_mul", [(0, 4), (1, 0)])[1] == [(0, 0)]
    assert shapes("broadcast_mul", [(2, 0), None])[1] == [None]
    with pytest.raises(ShapeError, match="does not broadcast"):
        shapes("broadcast_sub", [(0, 2, 4), (3, 4)])


def test_optimizer_updates_share_one_shape():
    ins, outs = shapes("sgd_mom_update", [(3, 4), None, None], lr=0.1)
    assert ins == [(3, 4)] * 3 and outs == [(3, 4)]
    assert shapes("adam_update", [None] * 4, [(5,)], lr=0.1) == ([(5,)] * 4, [(5,)])


def test_cast_one_hot_where_take_types():
    assert types("Cast", [None], dtype="int32") == ([None], ["int32"])
    assert shapes("Cast", [None], [(2, 3)], dtype="int32") == ([(2, 3)], [(2, 3)])
    with pytest.raises(TypeInferenceError, match="Cast: output 'output' has dtype float16, "
                                                 "expected int32"):
        types("Cast", ["float32"], ["float16"], dtype="int32")
    assert types("one_hot", [None], depth=3, dtype="float64") == ([None], ["float64"])
    assert types("where", [None, "float32", None]) == ([None, "float32", "float32"],
                                                       ["float32"])
    assert types("take", [None, None], ["float16"]) == (["float16", None], ["float16"])


# --- Concat, SliceChannel, Flatten, Reshape, transpose, dot -----------------------------------
def test_concat_fills_what_mxnet_fills():
    assert shapes("Concat", [(2, 3), (2, 5)], num_args=2, dim=1) == (
        [(2, 3), (2, 5)], [(2, 8)])
    # The other axes come from any input or the output; the joined size only
    # from all the inputs.
    assert shapes("Concat", [(0, 3), None], [(4, 0)], num_args=2, dim=1) == (
        [(4, 3), (4, 0)], [(4, 0)])
    assert shapes("Concat", [(2, 3), (2, 0)], [(2, 8)], num_args=2, dim=1)[0][1] == (2, 0)
    assert shapes("Concat", [(2, 3, 4), None, (2, 1, 4)], num_args=3, dim=-2)[1] == [(2, 0, 4)]
    with pytest.raises(ShapeError, match=r"Concat: argument 'arg1' has shape \(3, 5\), which "
                                         r"differs from argument 'arg0' \(2, 0\) on an axis "
                                         r"other than dim=1"):
        shapes("Concat", [(2, 3), (3, 5)], num_args=2, dim=1)
    with pytest.raises(ShapeError, match=r"output 'output' has shape \(2, 7\), expected "
                                         r"\(2, 8\)"):
        shapes("Concat", [(2, 3), (2, 5)], [(2, 7)], num_args=2, dim=1)


def test_slice_channel_both_directions():
    assert shapes("SliceChannel", [(4, 6)], num_outputs=3) == ([(4, 6)], [(4, 2)] * 3)
    assert shapes("SliceChannel", [(0, 3, 5)], num_outputs=3, squeeze_axis=True) == (
        [(0, 3, 5)], [(0, 5)] * 3)
    assert shapes("SliceChannel", [(0, 0)], [None, (7, 2)], num_outputs=2) == (
        [(7, 4)], [(7, 2), (7, 2)])
    assert shapes("SliceChannel", [(0, 0, 0)], [(7, 5), None], num_outputs=2, axis=1,
                  squeeze_axis=True) == ([(7, 2, 5)], [(7, 5), (7, 5)])
    with pytest.raises(ShapeError, match="num_outputs=4 does not divide"):
        shapes("SliceChannel", [(0, 6)], num_outputs=4)


def test_flatten():
    assert shapes("Flatten", [(0, 3, 4)]) == ([(0, 3, 4)], [(0, 12)])
    assert shapes("Flatten", [(5, 0, 4)])[1] == [(5, 0)]


def test_reshape_forward_and_back():
    assert shapes("Reshape", [(0, 784)], shape=(-1, 28, 28)) == ([(0, 784)], [(0, 28, 28)])
    assert shapes("Reshape", [(0, 784)], [(100, 28, 28)], shape=(-1, 28, 28)) == (
        [(100, 784)], [(100, 28, 28)])
    assert shapes("Reshape", [(0, 3, 4)], shape=(0, -3))[1] == [(0, 12)]
    assert shapes("Reshape", [(2, 0, 4)], shape=(-3, 0))[1] == [(0, 4)]
    assert shapes("Reshape", [(0, 6)], shape=(0, -4, 2, -1))[1] == [(0, 2, 3)]
    assert shapes("Reshape", [(2, 3, 0)], shape=(-1, 0), reverse=True)[1] == [(0, 0)]
    with pytest.raises(ShapeError, match=r"Reshape: output 'output' has shape \(5, 7\) \(35 "
                                         r"elements\), which 'data' \(0, 4\) cannot hold"):
        shapes("Reshape", [(0, 4)], [(5, 7)], shape=(5, 7))
    with pytest.raises(ShapeError, match="more than one -1"):
        shapes("Reshape", [(0, 4)], shape=(-1, -1))


def test_transpose_both_directions():
    assert shapes("transpose", [(2, 0, 4)]) == ([(2, 0, 4)], [(4, 0, 2)])
    assert shapes("transpose", [None], [(4, 3, 2)], axes=(2, 0, 1)) == (
        [(3, 2, 4)], [(4, 3, 2)])
    assert shapes("transpose", [(0, 3, 0)], [(5, 0, 3)], axes=(2, 0, 1)) == (
        [(0, 3, 5)], [(5, 0, 3)])
    with pytest.raises(ShapeError, match="not a permutation"):
        shapes("transpose", [(2, 3)], axes=(0, 2))


def test_dot_forward_with_unknown_dims():
    assert shapes("dot", [(0, 3), (3, 5)]) == ([(0, 3), (3, 5)], [(0, 5)])
    assert shapes("dot", [(3, 0), (4, 0)], transpose_a=True, transpose_b=True)[1] == [(0, 4)]
    assert shapes("dot", [(0,), (0,)])[1] == [(1,)]
    with pytest.raises(ShapeError, match=r"contracted axis \(4\) differs"):
        shapes("dot", [(0, 3), (4, 5)])


# --- OperatorProperty operators -------------------------------------------------------------
class _ScaleRowsProp(OperatorProperty):
    """scale (n, k) data by weight (k,): InferShape fills the weight, as an
    MXNet property does, and says nothing without the data."""
    params = {"k": Param("int", 1, doc="unused")}

    def list_arguments(self):
        return ["data", "weight"]

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        return [data, (data[1],)], [data], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        raise NotImplementedError


def test_operator_property_infer_shape_is_partial():
    register_op_property("_test_pi_scale_rows", _ScaleRowsProp)
    try:
        assert shapes("_test_pi_scale_rows", [(0, 4), None]) == ([(0, 4), (4,)], [(0, 4)])
        assert shapes("_test_pi_scale_rows", [None, (4,)]) == ([None, (4,)], [None])
        with pytest.raises(ShapeError, match=r"argument 'weight' has shape \(3,\), expected "
                                             r"\(4,\)"):
            shapes("_test_pi_scale_rows", [(0, 4), (3,)])
    finally:
        registry._unregister("_test_pi_scale_rows")
        registry._unregister("_backward__test_pi_scale_rows")
