"""Registrations of MXNet's contrib math operators _contrib_quadratic (and
_contrib_backward_quadratic), _contrib_div_sqrt_dim and _contrib_allclose,
and of the finiteness checks all_finite and multi_all_finite, with their
gradients.  The kernels compute as MXNet's: in float (double for float64),
the float parameters as float (contrib_math_cpu.h)."""
import struct

from mx_ops.core._limits import MAX_COUNT
from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient
from mx_ops.core.partial_infer import fixed_type, same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.contrib_math import _contrib_math_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_GPU = "mx_ops.ops.contrib_math._contrib_math_gpu"

_KERNELS = _contrib_math_cpu.kernels()
_FLOATS = ("float32", "float64", "float16")


def _same(op, names):
    """infer_shape and infer_type of inputs of one shape and dtype, the
    output too."""
    def shapes(params, ins):
        for n, s in zip(names[1:], ins[1:]):
            if tuple(s) != tuple(ins[0]):
                raise ShapeError(f"{op}: argument '{n}' has shape {tuple(s)}; '{names[0]}' "
                                 f"has {tuple(ins[0])}")
        return [tuple(ins[0])]

    def types(params, dtypes):
        for n, t in zip(names[1:], dtypes[1:]):
            if t != dtypes[0]:
                raise TypeInferenceError(f"{op}: argument '{n}' has dtype {t}; '{names[0]}' "
                                         f"has {dtypes[0]}")
        return [dtypes[0]]
    return shapes, types


def _quadratic_pack(params, shapes):
    """mxop::QuadraticParam: a, b, c as float."""
    return struct.pack("=3f", params["a"], params["b"], params["c"])


_ABC = {k: Param("float", 0.0, doc=f"Coefficient of the {t} term.")
        for k, t in (("a", "quadratic"), ("b", "linear"), ("c", "constant"))}

register(OpDef(
    "_contrib_quadratic", arguments=("data",), input_docs={"data": "Input ndarray."},
    params=_ABC, infer_shape=lambda p, s: [tuple(s[0])], infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["quadratic"], gpu_compute(_GPU, "quadratic")),
    pack_params=_quadratic_pack, inplace=((0, 0),),
    doc="a * data**2 + b * data + c elementwise."))

_q_shapes, _q_types = _same("_contrib_backward_quadratic", ("ograd", "data"))
register(OpDef(
    "_contrib_backward_quadratic", arguments=("ograd", "data"),
    input_docs={"ograd": "Gradient of quadratic's output.", "data": "quadratic's input."},
    params=_ABC, infer_shape=_q_shapes, infer_type=_q_types,
    compute=computes(_KERNELS["quadratic_backward"], gpu_compute(_GPU, "quadratic_backward")),
    pack_params=_quadratic_pack, differentiable=False,
    doc="quadratic's gradient with respect to 'data': ograd * (2 a data + b)."))

register(OpDef(
    "_contrib_div_sqrt_dim", arguments=("data",), input_docs={"data": "Input ndarray."},
    infer_shape=lambda p, s: [tuple(s[0])], infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["div_sqrt_dim"], gpu_compute(_GPU, "div_sqrt_dim")),
    inplace=((0, 0),),
    doc="data / sqrt(data.shape[-1]) (the divisor converted to the dtype first: integers "
        "divide by its integer part)."))


_ab_shapes, _ab_types = _same("_contrib_allclose", ("a", "b"))


def _allclose_shape(params, shapes):
    _ab_shapes(params, shapes)
    return [()]


def _allclose_type(params, dtypes):
    _ab_types(params, dtypes)
    return ["uint8"]


register(OpDef(
    "_contrib_allclose", arguments=("a", "b"),
    input_docs={"a": "Input array a.", "b": "Input array b."},
    params={"rtol": Param("float", 1e-5, doc="Relative tolerance."),
            "atol": Param("float", 1e-8, doc="Absolute tolerance."),
            "equal_nan": Param("bool", True, doc="Whether NaNs in 'a' and 'b' at one "
                                                 "position count as equal.")},
    infer_shape=_allclose_shape, infer_type=_allclose_type,
    compute=computes(_KERNELS["allclose"], gpu_compute(_GPU, "allclose")),
    pack_params=lambda p, s: struct.pack("=ffi", p["rtol"], p["atol"], int(p["equal_nan"])),
    differentiable=False,
    doc="1 (uint8, shape ()) when |a - b| <= atol + rtol * |b| everywhere (numpy.allclose; "
        "equal infinities are close), else 0."))


def _finite_types(op):
    """Floating point inputs, all of one dtype (MXNet reads every input as
    the first one's); the output is float32."""
    def types(params, dtypes):
        for i, t in enumerate(dtypes):
            if t not in _FLOATS:
                raise TypeInferenceError(f"{op}: input {i} has dtype {t}; only floating point "
                                         f"types are supported")
            if t != dtypes[0]:
                raise TypeInferenceError(f"{op}: input {i} has dtype {t}; input 0 has "
                                         f"{dtypes[0]}, and all must have one dtype")
        return ["float32"]
    return types


_INIT = Param("bool", True, doc="Initialize the output to 1 (else it is only set to 0 when "
                                "an element is not finite).")

register(OpDef(
    "all_finite", arguments=("data",), input_docs={"data": "Array."},
    params={"init_output": _INIT},
    infer_shape=lambda p, s: [(1,)], infer_type=_finite_types("all_finite"),
    compute=computes(_KERNELS["all_finite"], gpu_compute(_GPU, "all_finite")),
    pack_params=lambda p, s: struct.pack("=i", int(p["init_output"])), differentiable=False,
    doc="1 (float32, shape (1,)) when every element of 'data' is finite, else 0 (MXNet's "
        "AMP check)."))

register(OpDef(
    "multi_all_finite", arguments=("data",), key_var_num_args="num_arrays",
    list_input_names=lambda p: [f"array_{i}" for i in range(p["num_arrays"])],
    input_docs={"data": "Arrays."},
    params={"num_arrays": Param("int", 1, low=1, high=MAX_COUNT, doc="Number of arrays."),
            "init_output": _INIT},
    infer_shape=lambda p, s: [(1,)], infer_type=_finite_types("multi_all_finite"),
    compute=computes(_KERNELS["all_finite"], gpu_compute(_GPU, "all_finite")),
    pack_params=lambda p, s: struct.pack("=i", int(p["init_output"])), differentiable=False,
    doc="1 (float32, shape (1,)) when every element of every input is finite, else 0."))


# --- gradients -------------------------------------------------------------------------

def _quadratic(node, ograds):
    return [apply("_contrib_backward_quadratic", ograds[0], node.inputs[0], **node.params)]


set_gradient("_contrib_quadratic", _quadratic)
# div_sqrt_dim is linear: its gradient is itself applied to the head gradient.
set_gradient("_contrib_div_sqrt_dim",
             lambda node, ograds: [apply("_contrib_div_sqrt_dim", ograds[0])])


def _one_input_type(out_dtype):
    """A type rule: the inputs share a dtype; the output's is fixed."""
    inputs, output = same_type(outputs=()), fixed_type(out_dtype)

    def rule(params, ins, outs):
        return output(params, *inputs(params, ins, outs))
    return rule


set_infer_type_partial("_contrib_allclose", _one_input_type("uint8"))
for _name in ("all_finite", "multi_all_finite"):
    set_infer_type_partial(_name, _one_input_type("float32"))
