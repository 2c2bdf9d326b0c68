import numpy as np
import pytest

import mx_ops
from mx_ops import OpDef, Param, get, list_ops, register
from mx_ops.core._params import ParamError
from mx_ops.core.registry import OperatorNotFound


@pytest.mark.parametrize("kind, value, want", [
    ("int", "3", 3), ("int", 4, 4), ("int", 2.0, 2), ("float", "0.5", 0.5), ("float", 2, 2.0),
    ("bool", "True", True), ("bool", "0", False), ("bool", False, False),
    ("shape", "(3, 3)", (3, 3)), ("shape", "(2,)", (2,)), ("shape", "[1,2]", (1, 2)),
    ("shape", (4, 5), (4, 5)), ("shape", 7, (7,)), ("shape", "()", ()),
    ("dtype", "float16", "float16"), ("dtype", np.int32, "int32"), ("str", "relu", "relu"),
])
def test_params_parse_python_values_and_mxnet_strings(kind, value, want):
    assert Param(kind).parse("op", "p", value) == want


@pytest.mark.parametrize("param, value, text", [
    (Param("int", low=1), 0, "op: argument 'p' must be in [1, 2147483647]; got 0"),
    (Param("int"), 1.5, "must be an integer"),
    (Param("int"), True, "not bool"),
    (Param("bool"), "yes", "must be a bool"),
    (Param("str", choices=("relu", "tanh")), "gelu", "must be one of 'relu', 'tanh'"),
    (Param("shape"), "(a, b)", "argument 'p'"),
    (Param("dtype"), "complex64", "must be one of float32"),
    (Param("float"), None, "may not be None"),
])
def test_bad_params_name_op_and_argument(param, value, text):
    with pytest.raises(ParamError) as info:
        param.parse("op", "p", value)
    assert text in str(info.value) and "op: argument 'p'" in str(info.value)


def test_optional_none_and_required():
    assert Param("int", None).parse("op", "axis", "None") is None
    op = OpDef("_test_required", arguments=("data",), params={"k": Param("int")},
               infer_shape=lambda p, s: [s[0]], infer_type=lambda p, t: [t[0]], compute={})
    with pytest.raises(ParamError, match="_test_required: argument 'k' is required"):
        op.parse_params({})


def test_registry_lookup_and_duplicates():
    assert "broadcast_add" in list_ops() and "_plus" not in list_ops()
    with pytest.raises(mx_ops.core.registry.MXNetError, match="'exp' is already registered"):
        register(OpDef("exp", arguments=("x",), infer_shape=None, infer_type=None, compute={}))
    with pytest.raises(OperatorNotFound, match="no 'compute\\[tpu\\]' registered for operator 'exp'"):
        get("exp").compute_for("tpu")


def test_docstrings_are_generated_from_the_registration():
    doc = get("_plus_scalar").docstring()
    assert "scalar : float, optional, default=1.0" in doc and "data : NDArray" in doc
    assert "Aliases: _PlusScalar." in doc


def test_kernel_header_is_installed_with_the_package():
    import os
    assert os.path.exists(os.path.join(mx_ops.get_include(), "mx_ops", "tblob.h"))
