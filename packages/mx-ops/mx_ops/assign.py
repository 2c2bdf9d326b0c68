"""Registrations of _slice_assign and _slice_assign_scalar (MXNet's names,
aliases _crop_assign and _crop_assign_scalar): the output is ``lhs`` with
the region begin:end:step replaced by ``rhs`` or by a scalar.  NDArray's
``a[key] = value`` runs them in place (the output is ``lhs``) for regions
that are not one contiguous block."""
import struct

from mx_ops import _assign_cpu
from mx_ops._params import Param
from mx_ops.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                             register)
from mx_ops.shape import _sliced_shape, _slices, _strides

_KERNELS = _assign_cpu.kernels()


def _region(params, shape, op):
    """mxop::RegionParam of the slices of ``shape``."""
    slices = _slices(params, shape, op)
    src = _strides(shape)
    region = _sliced_shape(slices)
    pad = [0] * (8 - len(shape))
    return struct.pack("=q8q8qq", sum(sl[0] * k for sl, k in zip(slices, src)),
                       *([sl[2] * k for sl, k in zip(slices, src)] + pad),
                       *(list(region) + pad), len(shape))


def _slice_params():
    return {"begin": Param("opt_shape", doc="Start per axis (None: from the edge)."),
            "end": Param("opt_shape", doc="Stop per axis (None: to the edge)."),
            "step": Param("opt_shape", (), doc="Step per axis (default 1).")}


def _assign_shape(params, shapes):
    lhs, rhs = tuple(shapes[0]), tuple(shapes[1])
    region = _sliced_shape(_slices(params, lhs, "_slice_assign"))
    if rhs != region:
        raise ShapeError(f"_slice_assign: argument 'rhs' has shape {rhs}, but the region "
                         f"begin={params['begin']} end={params['end']} step={params['step']} "
                         f"of 'lhs' {lhs} has shape {region}")
    return [lhs]


def _assign_type(params, dtypes):
    if dtypes[1] != dtypes[0]:
        raise TypeInferenceError(f"_slice_assign: argument 'rhs' has dtype {dtypes[1]}, "
                                 f"'lhs' {dtypes[0]}")
    return [dtypes[0]]


def _assign_pack(params, shapes):
    """mxop::RegionParam of the region of 'lhs'."""
    return _region(params, shapes[0], "_slice_assign")


register(OpDef(
    "_slice_assign", arguments=("lhs", "rhs"), params=_slice_params(),
    infer_shape=_assign_shape, infer_type=_assign_type,
    compute=computes(_KERNELS["array"], gpu_compute("_assign_gpu", "slice_assign",
                                                    _assign_pack)),
    pack_params=_assign_pack, inplace=((0, 0),),
    aliases=("_crop_assign",),
    doc="``lhs`` with the region begin:end:step replaced by ``rhs`` (of the region's "
        "shape)."))


def _scalar_shape(params, shapes):
    _slices(params, shapes[0], "_slice_assign_scalar")      # checks the slices
    return [tuple(shapes[0])]


def _scalar_pack(params, shapes):
    """mxop::ScalarRegionParam: the region of 'data', then the scalar."""
    return (_region(params, shapes[0], "_slice_assign_scalar")
            + struct.pack("=d", params["scalar"]))


register(OpDef(
    "_slice_assign_scalar", arguments=("data",),
    params={"scalar": Param("float", 0.0, doc="The value the region gets."), **_slice_params()},
    infer_shape=_scalar_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["scalar"], gpu_compute("_assign_gpu", "slice_assign_scalar",
                                                     _scalar_pack)),
    pack_params=_scalar_pack,
    inplace=((0, 0),), aliases=("_crop_assign_scalar",),
    doc="``data`` with the region begin:end:step set to ``scalar``."))
