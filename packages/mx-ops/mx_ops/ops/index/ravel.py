"""Registrations of _ravel_multi_index (ravel_multi_index) and
_unravel_index (unravel_index): multi-indices (a column of a (ndim, ...)
array each) to flat indices of an array of shape 'shape', and back, in the
data's dtype as MXNet computes them (float32 by default).  The first
dimension of 'shape' may be -1 (unknown): neither direction reads it."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import set_gradient, zeros_like
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.index import _ravel_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_RAVEL_GPU = "mx_ops.ops.index._ravel_gpu"

_KERNELS = _ravel_cpu.kernels()


def _dims(op, params):
    """The 'shape' parameter, checked: at least one dimension, all but the
    first positive (unravel divides by them)."""
    shape = params["shape"]
    if shape is None or len(shape) == 0:
        raise ShapeError(f"{op}: argument 'shape' must hold at least one dimension, got "
                         f"{shape}")
    if shape[0] < -1 or any(s <= 0 for s in shape[1:]):
        raise ShapeError(f"{op}: argument 'shape' is {tuple(shape)}; its dimensions must be "
                         f"positive (the first may be -1)")
    return tuple(shape)


def _pack(op):
    def pack(params, shapes):
        dims = _dims(op, params)
        return struct.pack(f"={len(dims) + 1}q", len(dims), *dims)
    return pack


def _ravel_shape(params, shapes):
    dims, data = _dims("_ravel_multi_index", params), tuple(shapes[0])
    if len(data) == 0 or data[0] != len(dims):
        raise ShapeError(f"_ravel_multi_index: the first dimension of 'data' {data} must be "
                         f"the {len(dims)} dimensions of 'shape' {dims}")
    return [data[1:]]


def _unravel_shape(params, shapes):
    return [(len(_dims("_unravel_index", params)),) + tuple(shapes[0])]


_SHAPE = Param("shape", None, optional=True,
               doc="Shape of the array into which the multi-indices apply.")

register(OpDef(
    "_ravel_multi_index", arguments=("data",), aliases=("ravel_multi_index",),
    input_docs={"data": "Batch of multi-indices, one per column: (len(shape), ...)."},
    params={"shape": _SHAPE},
    infer_shape=_ravel_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["ravel"],
                     gpu_compute(_RAVEL_GPU, "ravel", _pack("_ravel_multi_index"))),
    pack_params=_pack("_ravel_multi_index"),
    doc="The flat index of each multi-index (a column of 'data') in an array of 'shape' "
        "(numpy.ravel_multi_index; indices are truncated to integers and not checked)."))

register(OpDef(
    "_unravel_index", arguments=("data",), aliases=("unravel_index",),
    input_docs={"data": "Array of flat indices."},
    params={"shape": _SHAPE},
    infer_shape=_unravel_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["unravel"],
                     gpu_compute(_RAVEL_GPU, "unravel", _pack("_unravel_index"))),
    pack_params=_pack("_unravel_index"),
    doc="The multi-index of each flat index in an array of 'shape', as the columns of a "
        "(len(shape), ...) array (numpy.unravel_index; the first axis takes what is left of "
        "an index beyond the array)."))

# Their outputs are piecewise constant in the data: MXNet's zero gradients.
for _name in ("_ravel_multi_index", "_unravel_index"):
    set_gradient(_name, lambda node, ograds: [zeros_like(node.inputs[0])])
