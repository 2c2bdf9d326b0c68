"""Registrations of _full (an array of one value, MXNet's internal init op)
and Cast (dtype conversion, MXNet's Cast / cast)."""
import struct

from mx_ops import _init_cpu
from mx_ops._params import Param
from mx_ops.registry import OpDef, ShapeError, computes, gpu_compute, register

_KERNELS = _init_cpu.kernels()


def _full_shape(params, shapes):
    shape = params["shape"]
    if any(s < 0 for s in shape):
        raise ShapeError(f"_full: argument 'shape' must hold non-negative sizes, got {shape}")
    return [shape]


register(OpDef(
    "_full", arguments=(), params={
        "shape": Param("shape", (), doc="The output's shape."),
        "dtype": Param("dtype", "float32", doc="The output's dtype."),
        "value": Param("float", 0.0, doc="The value of every element."),
    },
    infer_shape=_full_shape, infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["full"], gpu_compute("_init_gpu", "full")),
    pack_params=lambda params, shapes: struct.pack("=d", params["value"]),  # FillParam
    differentiable=False,
    doc="An array of ``shape`` with every element ``value``."))

register(OpDef(
    "Cast", arguments=("data",), params={"dtype": Param("dtype", doc="The output dtype.")},
    infer_shape=lambda params, shapes: [shapes[0]],
    infer_type=lambda params, dtypes: [params["dtype"]],
    compute=computes(_KERNELS["cast"], gpu_compute("_init_gpu", "cast")), aliases=("cast",),
    doc="Converts ``data`` to ``dtype`` (C conversions: floats truncate toward zero "
        "into integers, out-of-range values wrap)."))
