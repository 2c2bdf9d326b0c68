"""Registrations of _slice_assign and _slice_assign_scalar (MXNet's names,
aliases _crop_assign and _crop_assign_scalar): the output is ``lhs`` with
the region begin:end:step replaced by ``rhs`` or by a scalar.  NDArray's
``a[key] = value`` runs them in place (the output is ``lhs``) for regions
that are not one contiguous block."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.assign import _assign_cpu
from mx_ops.ops.shape.shape import _axis_slices, _sliced_shape, _slices, _strides

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_ASSIGN_GPU = "mx_ops.ops.assign._assign_gpu"

_KERNELS = _assign_cpu.kernels()


def _region(params, shape, op):
    """mxop::RegionParam of the slices of ``shape``."""
    return _region_of(_slices(params, shape, op), shape)


def _region_of(slices, shape):
    """mxop::RegionParam of ``slices`` ((start, stop, step) per axis)."""
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
    compute=computes(_KERNELS["array"], gpu_compute(_ASSIGN_GPU, "slice_assign",
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
    compute=computes(_KERNELS["scalar"], gpu_compute(_ASSIGN_GPU, "slice_assign_scalar",
                                                     _scalar_pack)),
    pack_params=_scalar_pack,
    inplace=((0, 0),), aliases=("_crop_assign_scalar",),
    doc="``data`` with the region begin:end:step set to ``scalar``."))


# --- the slices' backward: the output gradient scattered into zeros -------------------
def _grad_shape(op, slices_of):
    def infer(params, shapes):
        g, like = tuple(shapes[0]), tuple(shapes[1])
        region = _sliced_shape(slices_of(params, like))
        if g != region:
            raise ShapeError(f"{op}: argument 'ograd' has shape {g}, but the region of 'data' "
                             f"{like} has shape {region}")
        return [like]
    return infer


def _grad_type(op):
    def infer(params, dtypes):
        if dtypes[1] != dtypes[0]:
            raise TypeInferenceError(f"{op}: argument 'data' has dtype {dtypes[1]}, 'ograd' "
                                     f"{dtypes[0]}")
        return [dtypes[0]]
    return infer


def _slice_region(params, shapes):
    """mxop::RegionParam of slice's region in 'data' (the second input)."""
    return _region(params, shapes[1], "_backward_slice")


def _slice_axis_region(params, shapes):
    """mxop::RegionParam of slice_axis's region in 'data' (the second input)."""
    return _region_of(_axis_slices(params, shapes[1]), shapes[1])


register(OpDef(
    "_backward_slice", arguments=("ograd", "data"), params=_slice_params(),
    infer_shape=_grad_shape("_backward_slice", lambda p, s: _slices(p, s, "_backward_slice")),
    infer_type=_grad_type("_backward_slice"),
    compute=computes(_KERNELS["backward"], gpu_compute(_ASSIGN_GPU, "slice_backward",
                                                       _slice_region)),
    pack_params=_slice_region,
    doc="slice's gradient: zeros of the shape of ``data`` (read for its shape only) with "
        "the region begin:end:step set to ``ograd``."))

register(OpDef(
    "_backward_slice_axis", arguments=("ograd", "data"),
    params={"axis": Param("int", doc="The sliced axis."),
            "begin": Param("int", doc="Start (negative counts from the end)."),
            "end": Param("int", None, doc="Stop (None: to the end).")},
    infer_shape=_grad_shape("_backward_slice_axis", _axis_slices),
    infer_type=_grad_type("_backward_slice_axis"),
    compute=computes(_KERNELS["backward"], gpu_compute(_ASSIGN_GPU, "slice_backward",
                                                       _slice_axis_region)),
    pack_params=_slice_axis_region,
    doc="slice_axis's gradient: zeros of the shape of ``data`` (read for its shape only) "
        "with data[..., begin:end, ...] set to ``ograd``."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

def _param_region(p):
    """The slice parameters of a node, as slice and _slice_assign take them."""
    return {"begin": p["begin"], "end": p["end"], "step": p["step"]}


def _slice_assign(node, ograds):
    """out = lhs with the region set to rhs: lhs gets g outside the region,
    rhs gets g's region.  (MXNet 1.x registers no gradient here.)"""
    g, region = ograds[0], _param_region(node.params)
    return [apply("_slice_assign_scalar", g, scalar=0.0, **region), apply("slice", g, **region)]


def _slice_assign_scalar(node, ograds):
    return [apply("_slice_assign_scalar", ograds[0], scalar=0.0, **_param_region(node.params))]


def _backward_slice(node, ograds):
    p = node.params
    return [apply("slice", ograds[0], **_param_region(p)), zeros_like(node.inputs[1])]


def _backward_slice_axis(node, ograds):
    p = node.params
    return [apply("slice_axis", ograds[0], axis=p["axis"], begin=p["begin"], end=p["end"]),
            zeros_like(node.inputs[1])]


_GRADIENTS = {"_slice_assign": _slice_assign, "_slice_assign_scalar": _slice_assign_scalar, "_backward_slice": _backward_slice, "_backward_slice_axis": _backward_slice_axis}
for _name, _maker in _GRADIENTS.items():
    set_gradient(_name, _maker)
