"""Gradient makers of the broadcasting binary ops, the reductions and the
shape, join, index, assignment and selection ops (and of the helper ops
they use) against central finite differences in float64; zero gradients
where MXNet gives them; and the routing rules finite differences cannot
see (max/min ties, duplicate indices)."""
import numpy as np
import pytest

from mx_ops.ops.elemwise.grad import BINARY_EXPR
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient

RNG = np.random.default_rng(29)


def u(shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape)


def positive(shape):
    return u(shape, 0.4, 1.2)


# --- elementwise: broadcasting on either side ----------------------------------------
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)),
          ((2, 1, 4), (3, 1)), ((1,), (2, 3)), ((2, 3), ())]
SMOOTH = ["add", "sub", "mul", "div", "power", "hypot", "maximum", "minimum", "mod"]


def _operands(kernel, sa, sb):
    if kernel == "power":
        return [positive(sa), u(sb)]
    if kernel in ("div", "mod"):
        return [u(sa, 1.0, 3.0), positive(sb)]
    return [u(sa), u(sb)]


@pytest.mark.parametrize("sa, sb", SHAPES)
@pytest.mark.parametrize("kernel", SMOOTH)
def test_broadcast_binary_gradients(kernel, sa, sb):
    check_numeric_gradient(f"broadcast_{kernel}", _operands(kernel, sa, sb))


@pytest.mark.parametrize("kernel", SMOOTH)
def test_elementwise_binary_gradients(kernel):
    name = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
            "div": "elemwise_div"}.get(kernel, f"_{kernel}")
    check_numeric_gradient(name, _operands(kernel, (2, 3, 4), (2, 3, 4)))


def test_maximum_and_minimum_send_ties_to_the_lhs():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0])
    g = np.array([0.5, 0.25, 2.0])
    for op, lhs_gets in (("_maximum", [1, 0, 1]), ("_minimum", [1, 1, 0]),
                         ("broadcast_maximum", [1, 0, 1])):
        ga, gb = symbolic_gradient(op, [a, b], [g])
        np.testing.assert_array_equal(ga, g * lhs_gets)
        np.testing.assert_array_equal(gb, g * (1 - np.array(lhs_gets)))


@pytest.mark.parametrize("name, s", [("_maximum_scalar", 0.0), ("_minimum_scalar", 0.0),
                                     ("_hypot_scalar", -0.7), ("_rpower_scalar", 2.5),
                                     ("_mod_scalar", 0.45), ("_rmod_scalar", 1.9)])
def test_scalar_gradients_on_both_sides_of_the_scalar(name, s):
    x = u((4, 5), 0.3, 1.0) * RNG.choice([-1, 1], (4, 5)) if "mod" not in name else \
        u((4, 5), 0.3, 1.0)
    check_numeric_gradient(name, [x], scalar=s)


ZERO = ["equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
        "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("kernel", ZERO)
def test_comparisons_and_logical_ops_have_zero_gradients(kernel):
    assert kernel in BINARY_EXPR
    a, b = u((3, 4)), u((3, 4))
    for name, ins, kw in ((f"_{kernel}", [a, b], {}), (f"broadcast_{kernel}", [a, b[:1]], {}),
                          (f"_{kernel}_scalar", [a], {"scalar": 0.1})):
        got = check_numeric_gradient(name, ins, **kw)
        for g, x in zip(got, ins):
            np.testing.assert_array_equal(g, np.zeros_like(x))


@pytest.mark.parametrize("name, kw", [("argmax", {"axis": 1}), ("argmin", {}),
                                      ("argmax", {"axis": -1, "keepdims": True})])
def test_arg_searches_have_zero_gradients(name, kw):
    x = u((3, 4))
    (g,) = check_numeric_gradient(name, [x], **kw)
    np.testing.assert_array_equal(g, np.zeros_like(x))


# --- reductions ------------------------------------------------------------------------
REDUCE_KW = [{}, {"axis": (1,)}, {"axis": (0, -1)}, {"axis": (-2,), "keepdims": True},
             {"axis": (1,), "exclude": True}, {"axis": (0, 2), "exclude": True, "keepdims": True},
             {"axis": (), "keepdims": True}]


@pytest.mark.parametrize("kw", REDUCE_KW)
@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "prod", "nanprod", "max", "min"])
def test_reduction_gradients(name, kw):
    # distinct values (no ties for max/min), away from zero (prod's out / in)
    x = RNG.permutation(24).reshape(2, 3, 4) / 24.0 + 0.5
    check_numeric_gradient(name, [x], **kw)


@pytest.mark.parametrize("kw", [{}, {"axis": (1,)}, {"axis": (-1,), "keepdims": True},
                                {"ord": 1, "axis": (0, 2)}, {"ord": 1}])
def test_norm_gradients(kw):
    check_numeric_gradient("norm", [u((2, 3, 4))], **kw)


def test_norm_gradient_with_out_dtype():
    # the float32 result limits finite differences to ~1e-3
    check_numeric_gradient("norm", [u((3, 4))], rtol=1e-3, atol=1e-4, eps=1e-3,
                           out_dtype="float32", axis=(1,))


def test_max_and_min_route_the_gradient_to_every_tie():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    g = np.array([0.5, 2.0])
    (got,) = symbolic_gradient("max", [x], [g], axis=(1,))
    np.testing.assert_array_equal(got, [[0, 0.5, 0.5], [2, 2, 2]])
    (got,) = symbolic_gradient("min", [x], [g], axis=(1,))
    np.testing.assert_array_equal(got, [[0.5, 0, 0], [2, 2, 2]])


def test_nan_reductions_give_nan_inputs_zero_gradient():
    x = np.array([[1.5, np.nan, 2.0], [np.nan, np.nan, 4.0]])
    g = np.array([1.0, 3.0])
    (got,) = symbolic_gradient("nansum", [x], [g], axis=(1,))
    np.testing.assert_array_equal(got, [[1, 0, 1], [0, 0, 3]])
    (got,) = symbolic_gradient("nanprod", [x], [g], axis=(1,))
    np.testing.assert_array_equal(got, [[2, 0, 1.5], [0, 0, 3]])


def test_prod_uses_out_over_in_as_mxnet_does():
    (got,) = symbolic_gradient("prod", [np.array([0.0, 2.0])], [np.array([1.0])])
    assert np.isnan(got[0]) and got[1] == 0.0      # 0/0, then 0/2


# --- shape, join and selection ops ---------------------------------------------------
@pytest.mark.parametrize("name, inputs, kw", [
    ("Reshape", [u((2, 3, 4))], {"shape": (-1, 0)}),
    ("Reshape", [u((6, 4))], {"shape": (-4, 2, 3, -2), "reverse": False}),
    ("Flatten", [u((2, 3, 2))], {}),
    ("expand_dims", [u((2, 3))], {"axis": -1}),
    ("expand_dims", [u((2, 3))], {"axis": 0}),
    ("Cast", [u((2, 3))], {"dtype": "float64"}),
    ("broadcast_to", [u((3, 1, 2))], {"shape": (3, 4, 0)}),
    ("broadcast_to", [u((1, 1))], {"shape": (2, 5)}),
    ("Concat", [u((2, 3)), u((2, 1)), u((2, 2))], {"dim": 1}),
    ("Concat", [u((2, 3)), u((1, 3))], {"dim": -2}),
    ("Concat", [u((4,))], {"dim": 0}),
    ("SliceChannel", [u((2, 6))], {"num_outputs": 3, "axis": -1}),
    ("SliceChannel", [u((3, 2))], {"num_outputs": 3, "axis": 0, "squeeze_axis": True}),
    ("SliceChannel", [u((2, 2, 3))], {"num_outputs": 2, "axis": -2, "squeeze_axis": True}),
    ("slice", [u((4, 5))], {"begin": (1, None), "end": (4, None), "step": (2, -2)}),
    ("slice", [u((3, 4, 2))], {"begin": (-2,), "end": (None,)}),
    ("slice_axis", [u((4, 5))], {"axis": -1, "begin": 1, "end": -1}),
    ("slice_axis", [u((4, 5, 2))], {"axis": 0, "begin": -3, "end": None}),
    ("clip", [u((4, 5))], {"a_min": -0.5, "a_max": 0.5}),
    ("batch_dot", [u((2, 3, 4)), u((2, 4, 5))], {}),
    ("batch_dot", [u((2, 4, 3)), u((2, 5, 4))], {"transpose_a": True, "transpose_b": True}),
    ("batch_dot", [u((2, 2, 3, 4)), u((2, 2, 5, 4))], {"transpose_b": True}),
    ("_slice_assign", [u((4, 5)), u((2, 5))], {"begin": (1,), "end": (3,)}),
    ("_slice_assign", [u((4, 5)), u((2, 2))], {"begin": (0, -1), "end": (4, 0),
                                                "step": (2, -2)}),
    ("_slice_assign_scalar", [u((4, 5))], {"begin": (1, 1), "end": (3, 4), "scalar": 2.0}),
    ("reshape_like", [u((2, 6)), u((3, 4))], {}),
    ("reshape_like", [u((30, 2)), u((5, 6, 4))], {"lhs_begin": 0, "lhs_end": 1,
                                                   "rhs_begin": 0, "rhs_end": 2}),
    ("broadcast_like", [u((2, 1)), u((2, 3))], {}),
    ("broadcast_like", [u((2, 1, 1)), u((4, 5))], {"lhs_axes": (1, 2), "rhs_axes": (0, 1)}),
    ("_collapse_sum_like", [u((2, 3, 4)), u((3, 1))], {}),
    ("_collapse_sum_like", [u((2, 3)), u((2, 3))], {}),
    ("_broadcast_reduce_like", [u((3,)), u((2, 3, 4))], {"axis": (0, 2)}),
    ("_broadcast_reduce_like", [u((1, 3, 1)), u((2, 3, 4))],
     {"axis": (0, 2), "keepdims": True, "normalize": True}),
    ("_broadcast_reduce_like", [u((2, 4)), u((2, 3, 4))], {"axis": (0, 2), "exclude": True}),
    ("_backward_Cast", [u((2, 3)), u((2, 3))], {}),
    ("_backward_Concat", [u((2, 5)), u((2, 3)), u((2, 2))], {"dim": 1}),
    ("_backward_slice", [u((2, 5)), u((4, 5))], {"begin": (1,), "end": (3,)}),
    ("_backward_slice_axis", [u((4, 2)), u((4, 5))], {"axis": 1, "begin": 2, "end": 4}),
])
def test_shape_op_gradients(name, inputs, kw):
    # only the first input is differentiated where the others give a shape
    only = (0,) if name.startswith("_backward") or name.endswith("_like") else None
    got = check_numeric_gradient(name, inputs, check_inputs=only, **kw)
    if only:
        for g, x in zip(got[1:], inputs[1:]):
            np.testing.assert_array_equal(g, np.zeros_like(x))


def test_where_gradients():
    x, y = u((3, 2)), u((3, 2))
    for cond in (RNG.integers(0, 2, (3, 2)).astype(float), np.array([1.0, 0.0, 1.0])):
        got = check_numeric_gradient("where", [cond, x, y], check_inputs=(1, 2))
        np.testing.assert_array_equal(got[0], np.zeros_like(cond))


# --- index ops: finite differences for the data, zeros for the indices --------------
@pytest.mark.parametrize("name, inputs, kw", [
    ("take", [u((4, 3)), np.array([[0.0, 3.0], [3.0, 5.0]])], {"mode": "clip"}),
    ("take", [u((4, 3)), np.array([-1.0, 6.0, 2.0, 2.0])], {"axis": -1, "mode": "wrap"}),
    ("take", [u((2, 4, 3)), np.array([1.0, 1.0, 0.0])], {"axis": 1, "mode": "raise"}),
    ("gather_nd", [u((4, 3, 2)), np.array([[0.0, 3.0, 0.0], [2.0, 0.0, 2.0]])], {}),
    ("gather_nd", [u((4, 3)), np.array([[-1.0, 1.0]])], {}),
    ("scatter_nd", [u((3, 2)), np.array([[0.0, 3.0, 1.0], [2.0, 0.0, 1.0]])],
     {"shape": (4, 3, 2)}),
    ("_backward_take", [u((2, 2)), np.array([1.0, 1.0]), u((3, 2))], {}),
    ("_backward_gather_nd", [u((3, 2)), np.array([[0.0, 3.0, 0.0], [2.0, 0.0, 2.0]]),
                             u((4, 3, 2))], {}),
])
def test_index_op_gradients(name, inputs, kw):
    got = check_numeric_gradient(name, inputs, check_inputs=(0,), **kw)
    for g, x in zip(got[1:], inputs[1:]):
        np.testing.assert_array_equal(g, np.zeros_like(x))


def test_scatter_set_nd_gradients():
    lhs, rhs = u((4, 3, 2)), u((3, 2))
    idx = np.array([[0.0, 3.0, 1.0], [2.0, 0.0, 1.0]])
    got = check_numeric_gradient("_scatter_set_nd", [lhs, rhs, idx], check_inputs=(0, 1))
    np.testing.assert_array_equal(got[2], np.zeros_like(idx))


def test_duplicate_indices_accumulate():
    a = u((3, 2))
    g = np.arange(8.0).reshape(4, 2)
    (ga, gi) = symbolic_gradient("take", [a, np.array([2.0, 0.0, 2.0, 7.0])], [g])
    np.testing.assert_array_equal(ga, [[2, 3], [0, 0], [4 + 6 + 0, 5 + 7 + 1]])
    (gd, _) = symbolic_gradient("gather_nd", [a, np.array([[1.0, 1.0, 0.0]])], [g[:3]])
    np.testing.assert_array_equal(gd, [[4, 5], [0 + 2, 1 + 3], [0, 0]])


def test_rpower_scalar_of_a_non_positive_base():
    # log(s) comes from the log kernel there: NaN, as MXNet's rpower_grad gives
    for s in (0.0, -2.0):
        (got,) = symbolic_gradient("_rpower_scalar", [np.array([1.0, 2.0])], [np.ones(2)],
                                   scalar=s)
        assert np.isnan(got).all()
