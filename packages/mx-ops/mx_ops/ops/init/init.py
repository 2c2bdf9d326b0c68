"""Registrations of MXNet's init ops _full, _zeros, _ones and _arange (the
first three one fill kernel) and Cast (dtype conversion, MXNet's Cast /
cast)."""
import math
import struct

import numpy as np

from mx_ops import _init_cpu
from mx_ops._limits import check_shape
from mx_ops._params import DTYPE_NAMES, Param, ParamError
from mx_ops.registry import OpDef, ShapeError, computes, gpu_compute, register

_KERNELS = _init_cpu.kernels()
_ITEMSIZE = {name: np.dtype(name).itemsize for name in DTYPE_NAMES}


def shape_param_infer(op):
    """The infer_shape of an op whose output shape is its 'shape' parameter
    (and its dtype the 'dtype' one, float32 where None), checked against
    the size limits."""
    where = f"{op}: argument 'shape'"

    def infer(params, shapes):
        dtype = params["dtype"] or "float32"
        check_shape(params["shape"], where, _ITEMSIZE[dtype], dtype)
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
    compute=computes(_KERNELS["full"], gpu_compute("_init_gpu", "full")),
    pack_params=lambda params, shapes: struct.pack("=d", params["value"]),  # FillParam
    differentiable=False,
    doc="An array of ``shape`` with every element ``value``."))

for _name, _value in (("zeros_like", 0.0), ("ones_like", 1.0)):
    register(OpDef(
        _name, arguments=("data",), infer_shape=lambda params, shapes: [tuple(shapes[0])],
        infer_type=lambda params, dtypes: [dtypes[0]],
        compute=computes(_KERNELS["full"], gpu_compute("_init_gpu", "fill", _value)),
        pack_params=lambda params, shapes, v=_value: struct.pack("=d", v),
        differentiable=False,
        doc=f"An array of the shape and dtype of ``data`` filled with {_value:g} (``data`` "
            f"is not read)."))

for _name, _value in (("_zeros", 0.0), ("_ones", 1.0)):
    register(OpDef(
        _name, arguments=(), params=_init_params(), infer_shape=shape_param_infer(_name),
        infer_type=lambda params, dtypes: [params["dtype"]],
        compute=computes(_KERNELS["full"], gpu_compute("_init_gpu", "fill", _value)),
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
    compute=computes(_KERNELS["arange"], gpu_compute("_init_gpu", "arange")),
    pack_params=lambda params, shapes: struct.pack(           # mxop::RangeParam
        "=ddq", _range(params)[0], params["step"], params["repeat"]),
    differentiable=False,
    doc="Evenly spaced values start + i * step (in float64, then cast) over [start, stop), "
        "each repeated ``repeat`` times."))

register(OpDef(
    "Cast", arguments=("data",), params={"dtype": Param("dtype", doc="The output dtype.")},
    infer_shape=lambda params, shapes: [shapes[0]],
    infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["cast"], gpu_compute("_init_gpu", "cast")), aliases=("cast",),
    doc="Converts ``data`` to ``dtype`` (C conversions: floats truncate toward zero "
        "into integers, out-of-range values wrap)."))
