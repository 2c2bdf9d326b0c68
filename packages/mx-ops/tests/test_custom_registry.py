"""The registry side of Python custom operators, without NDArrays: the
attribute parser and list-valued inputs that ``Custom`` registers with,
its parsed parameters, shape and dtype inference from the prop, and the
gradient maker's nodes.  The computes themselves run on NDArrays and are
tested in mx-ndarray's tests/test_custom_op.py."""
import numpy as np
import pytest

from mx_ops import OpDef, get, registry
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext import custom
from mx_ops.ext._custom_info import CustomInfo


class ConcatProp(custom.CustomOpProp):
    """Two arguments joined along axis 0, with a running-count aux state."""

    def __init__(self, pad="0"):
        super().__init__()
        self.pad = int(pad)

    def list_arguments(self):
        return ["lhs", "rhs"]

    def list_auxiliary_states(self):
        return ["seen"]

    def infer_shape(self, in_shape):
        lhs, rhs = in_shape
        out = [lhs[0] + rhs[0] + self.pad] + lhs[1:]
        return in_shape, [out], [[1]]

    def infer_type(self, in_type):
        return in_type, [np.float64], [np.int32]


@pytest.fixture
def concat():
    custom.register("t_concat")(ConcatProp)
    yield get("Custom")
    custom._unregister("t_concat")


def test_custom_parses_its_arguments_through_the_prop(concat):
    params = concat.parse_call({"op_type": "t_concat", "pad": 2}, 3)
    assert params["pad"] == "2" and isinstance(params["_info"], CustomInfo)
    assert concat.input_names(params) == ["lhs", "rhs", "seen"]
    assert concat.output_names(params) == ["output"]
    assert concat.mutated_inputs(params) == (2,)
    # A node's parsed params parse to themselves (same info, same operator).
    assert concat.parse_call(params, 3)["_info"] is params["_info"]
    assert concat.infer_shape(params, [(2, 3), (4, 3), (1,)]) == [(8, 3)]
    assert concat.infer_type(params, ["float32", "float32", "int32"]) == ["float64"]
    with pytest.raises(TypeInferenceError, match=r"returned int32 for 'seen', whose input is "
                                                 r"float32"):
        concat.infer_type(params, ["float32", "float32", "float32"])
    with pytest.raises(ShapeError, match=r"returned shape \(1,\) for 'seen', whose input has "
                                         r"shape \(2,\)"):
        concat.infer_shape(params, [(2, 3), (4, 3), (2,)])


def test_custom_is_a_list_argument_operator_without_a_count(concat):
    assert concat.variadic and concat.var_inputs and not concat.optional_inputs
    assert concat.num_inputs is None and concat.compute_ex and not concat.compute
    doc = concat.docstring()
    assert "data : NDArray[]" in doc and "op_type : str" in doc
    with pytest.raises(ParamError, match=r"Custom: takes 3 input\(s\) \(lhs, rhs, seen\), "
                                         r"got 2"):
        concat.parse_call({"op_type": "t_concat"}, 2)
    with pytest.raises(ParamError, match="no custom operator is registered as op_type 'nope'"):
        concat.parse_call({"op_type": "nope"}, 1)


def test_backward_node_takes_the_declared_dependencies_then_aux(concat):
    from mx_ops.core.gradient import grad_entries
    from mx_ops.core.node import make_node, variable
    node = make_node("Custom", [variable("l"), variable("r"), variable("s")], op_type="t_concat")
    grads = grad_entries(node, [variable("g").outputs()[0]])
    back = grads[0].node
    assert grads[2] is None and grads[1].node is back
    # Default dependencies: out_grad, in_data, out_data; then the aux state.
    names = [e.node.name for e in back.inputs]
    assert names[:3] == ["g", "l", "r"] and back.inputs[3].node is node and names[4] == "s"
    bwd = get("_backward_Custom")
    assert bwd.input_names(back.params) == ["output_grad", "lhs", "rhs", "output", "seen"]
    assert bwd.output_names(back.params) == ["lhs_grad", "rhs_grad"]
    assert bwd.infer_shape(back.params, [(8, 3), (2, 3), (4, 3), (8, 3), (1,)]) == [(2, 3),
                                                                                   (4, 3)]


def test_attr_parser_replaces_typed_parameters():
    seen = []

    def parse(kwargs):
        seen.append(dict(kwargs))
        return {"n": int(kwargs.pop("n", 1)), **kwargs}

    op = OpDef("_test_attr_parser", arguments=("data",), var_inputs=True,
               list_input_names=lambda p: [f"x{i}" for i in range(p["n"])], attr_parser=parse,
               infer_shape=lambda p, s: [s[0]], infer_type=lambda p, t: [t[0]], compute={})
    params = op.parse_call({"n": "2", "anything": "goes"}, 2)
    assert params == {"n": 2, "anything": "goes"} and seen == [{"n": "2", "anything": "goes"}]
    assert op.input_names(params) == ["x0", "x1"]
    with pytest.raises(registry.MXNetError, match="var_inputs needs one list argument"):
        OpDef("_test_bad_var", arguments=("a", "b"), var_inputs=True,
              list_input_names=lambda p: [], infer_shape=None, infer_type=None, compute={})


def test_compute_ex_runner_is_required_for_plain_arrays(monkeypatch):
    monkeypatch.setattr(registry, "_compute_ex_runner", None)
    with pytest.raises(registry.MXNetError, match="import mx_ndarray"):
        registry.run_compute_ex(get("Custom"), "cpu", {}, [], [], [])
    with pytest.raises(registry.OperatorNotFound, match=r"compute_ex\[tpu\]"):
        registry.run_compute_ex(get("Custom"), "tpu", {}, [], [], [])
