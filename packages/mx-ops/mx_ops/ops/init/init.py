"""Registrations of MXNet's init ops _full, _zeros and _ones (one fill
kernel), _arange and _linspace (one range kernel, _linspace with its own
step), _eye, and Cast (dtype conversion, MXNet's Cast / cast)."""
import math
import struct

from mx_ops.core._limits import INT64_MAX, INT64_MIN, check_shape
from mx_ops.core._params import Param, ParamError
from mx_ops.core.dtypes import ITEMSIZES
from mx_ops.core.gradient import apply, set_gradient
from mx_ops.core.partial_infer import (dtype_param, same_shape, set_infer_shape_partial,
                                       set_infer_type_partial)
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.init import _init_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_INIT_GPU = "mx_ops.ops.init._init_gpu"

_KERNELS = _init_cpu.kernels()


def shape_param_infer(op):
    """The infer_shape of an op whose output shape is its 'shape' parameter
    (and its dtype the 'dtype' one, float32 where None), checked against
    the size limits."""
    where = f"{op}: argument 'shape'"

    def infer(params, shapes):
        dtype = params["dtype"] or "float32"
        check_shape(params["shape"], where, ITEMSIZES[dtype], dtype)
        return [params["shape"]]
    return infer


def _ctx_param():
    # MXNet stores the device of an init node as a string ("cpu(0)") in
    # -symbol.json; an imperative call passes a Context, which the NDArray
    # invoker takes out before the parameters are parsed.
    return Param("str", "", doc="The device, as MXNet's graphs store it.")


def _init_params(**extra):
    return {"shape": Param("shape", (), doc="The output's shape."),
            "ctx": _ctx_param(),
            "dtype": Param("dtype", "float32", doc="The output's dtype."), **extra}


register(OpDef(
    "_full", arguments=(),
    params=_init_params(value=Param("float", 0.0, doc="The value of every element.")),
    infer_shape=shape_param_infer("_full"), infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["full"], gpu_compute(_INIT_GPU, "full")),
    pack_params=lambda params, shapes: struct.pack("=d", params["value"]),  # FillParam
    differentiable=False,
    doc="An array of ``shape`` with every element ``value``."))

for _name, _value in (("zeros_like", 0.0), ("ones_like", 1.0)):
    register(OpDef(
        _name, arguments=("data",), infer_shape=lambda params, shapes: [tuple(shapes[0])],
        infer_type=lambda params, dtypes: [dtypes[0]],
        compute=computes(_KERNELS["full"], gpu_compute(_INIT_GPU, "fill", _value)),
        pack_params=lambda params, shapes, v=_value: struct.pack("=d", v),
        differentiable=False,
        doc=f"An array of the shape and dtype of ``data`` filled with {_value:g} (``data`` "
            f"is not read)."))

for _name, _value in (("_zeros", 0.0), ("_ones", 1.0)):
    register(OpDef(
        _name, arguments=(), params=_init_params(), infer_shape=shape_param_infer(_name),
        infer_type=lambda params, dtypes: [params["dtype"]],
        compute=computes(_KERNELS["full"], gpu_compute(_INIT_GPU, "fill", _value)),
        pack_params=lambda params, shapes, v=_value: struct.pack("=d", v),
        differentiable=False, doc=f"An array of ``shape`` filled with {_value:g}."))


def _range(params):
    """(start, stop, step) with MXNet's rule: no stop means [0, start)."""
    for key in ("start", "stop", "step"):
        if params[key] is not None and not math.isfinite(params[key]):
            raise ParamError(f"_arange: argument '{key}' must be finite, got {params[key]}")
    start, stop, step = params["start"], params["stop"], params["step"]
    if stop is None:
        if params["infer_range"]:
            raise ShapeError("_arange: infer_range=True with stop=None takes the length from "
                             "a graph, which an imperative call does not have")
        start, stop = 0.0, start
    if step == 0:
        raise ShapeError("_arange: argument 'step' may not be 0")
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        raise ShapeError(f"_arange: invalid range (start, stop, step) = ({start}, {stop}, "
                         f"{step}): it holds no element")
    return start, stop, step


def _arange_shape(params, shapes):
    start, stop, step = _range(params)
    shape = (math.ceil((stop - start) / step) * params["repeat"],)
    check_shape(shape, f"_arange: the length of range({start}, {stop}, {step}) repeated "
                       f"{params['repeat']} times")
    return [shape]


register(OpDef(
    "_arange", arguments=(), params={
        "start": Param("float", doc="Start of the interval."),
        "stop": Param("float", None, doc="End of the interval (excluded); None: [0, start)."),
        "step": Param("float", 1.0, doc="Spacing between values."),
        "repeat": Param("int", 1, low=1, doc="How many times each value repeats."),
        "infer_range": Param("bool", False, doc="Infer stop from the output shape (graphs "
                                                "only)."),
        "ctx": _ctx_param(),
        "dtype": Param("dtype", "float32", doc="The output's dtype."),
    },
    infer_shape=_arange_shape, infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["arange"], gpu_compute(_INIT_GPU, "arange")),
    pack_params=lambda params, shapes: struct.pack(           # mxop::RangeParam
        "=ddq", _range(params)[0], params["step"], params["repeat"]),
    differentiable=False,
    doc="Evenly spaced values start + i * step (in float64, then cast) over [start, stop), "
        "each repeated ``repeat`` times."))


def _linspace_step(params):
    """MXNet's LinspaceParam step: (stop - start) / (num - 1) with the
    endpoint (0 for a single value), else / num."""
    start, stop, num = params["start"], params["stop"], params["num"]
    if params["endpoint"]:
        return (stop - start) / (num - 1) if num > 1 else 0.0
    return (stop - start) / num if num > 0 else 0.0


def _linspace_shape(params, shapes):
    if params["num"] < 0:
        raise ShapeError(f"_linspace: argument 'num' must be non-negative, got {params['num']}")
    check_shape((params["num"],), "_linspace: argument 'num'")
    return [(params["num"],)]


register(OpDef(
    "_linspace", arguments=(), params={
        "start": Param("float", doc="Start of the interval (its first value)."),
        "stop": Param("float", doc="End of the interval (its last value with 'endpoint')."),
        "num": Param("int", doc="How many values."),
        "endpoint": Param("bool", True, doc="Whether 'stop' is the last value (else the "
                                            "interval is [start, stop))."),
        "ctx": _ctx_param(),
        "dtype": Param("dtype", "float32", doc="The output's dtype."),
    },
    infer_shape=_linspace_shape, infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["arange"], gpu_compute(_INIT_GPU, "linspace")),
    pack_params=lambda params, shapes: struct.pack(           # mxop::RangeParam
        "=ddq", params["start"], _linspace_step(params), 1),
    differentiable=False,
    doc="'num' evenly spaced values start + i * step over [start, stop] (or [start, stop) "
        "without 'endpoint'), computed in float64 and then cast, as numpy.linspace."))


def _eye_shape(params, shapes):
    n, m = params["N"], params["M"]
    if n < 0 or m < 0:
        raise ShapeError(f"_eye: arguments 'N' and 'M' must be non-negative, got N={n}, M={m}")
    shape = (n, m or n)
    dtype = params["dtype"]
    check_shape(shape, "_eye: arguments 'N' and 'M'", ITEMSIZES[dtype], dtype)
    return [shape]


def eye_k(params):
    """k clamped to [-N, M] (no diagonal beyond: all zeros either way), so
    that row + k cannot overflow in the kernels."""
    n, m = _eye_shape(params, [])[0]
    return max(-n, min(params["k"], m))


register(OpDef(
    "_eye", arguments=(), params={
        "N": Param("int", low=INT64_MIN, high=INT64_MAX, doc="Number of rows in the output."),
        "M": Param("int", 0, low=INT64_MIN, high=INT64_MAX,
                   doc="Number of columns in the output; 0: N."),
        "k": Param("int", 0, low=INT64_MIN, high=INT64_MAX,
                   doc="Index of the diagonal: 0 the main one, a positive value an upper one, "
                       "a negative value a lower one."),
        "ctx": _ctx_param(),
        "dtype": Param("dtype", "float32", doc="The output's dtype."),
    },
    infer_shape=_eye_shape, infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["eye"], gpu_compute(_INIT_GPU, "eye")),
    pack_params=lambda params, shapes: struct.pack("=q", eye_k(params)),   # mxop::EyeParam
    differentiable=False,
    doc="A 2-D array (N, M) with ones on the k-th diagonal and zeros elsewhere."))


register(OpDef(
    "Cast", arguments=("data",), params={"dtype": Param("dtype", doc="The output dtype.")},
    infer_shape=lambda params, shapes: [shapes[0]],
    infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["cast"], gpu_compute(_INIT_GPU, "cast")), aliases=("cast",),
    doc="Converts ``data`` to ``dtype`` (C conversions: floats truncate toward zero "
        "into integers, out-of-range values wrap)."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

def _cast(node, ograds):
    return [apply("_backward_Cast", ograds[0], node.inputs[0])]


set_gradient("Cast", _cast)


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------
for _name in ("Cast", "zeros_like", "ones_like"):
    set_infer_shape_partial(_name, same_shape())
set_infer_type_partial("Cast", dtype_param)
