"""contrib arange_like (MXNet's ``_contrib_arange_like``): a range shaped
like the data (or like one of its axes), in the data's dtype."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import set_gradient, zeros_like
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.layout import _layout_cpu


def _shape(params, shapes):
    shape, axis = tuple(shapes[0]), params["axis"]
    if params["repeat"] < 1:
        raise ShapeError(f"_contrib_arange_like: argument 'repeat' must be >= 1, got "
                         f"{params['repeat']}")
    if axis is None:
        return [shape]
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"_contrib_arange_like: argument 'axis' is {axis}, out of range for "
                         f"'data' of shape {shape}")
    return [(shape[axis],)]


def _pack(params, shapes=None):
    """mxop::ArangeLikeParam."""
    return struct.pack("=ddq", params["start"], params["step"], params["repeat"])


register(OpDef(
    "_contrib_arange_like", arguments=("data",),
    input_docs={"data": "The input (its values are not read)."},
    params={"start": Param("float", 0.0, doc="Start of interval."),
            "step": Param("float", 1.0, doc="Spacing between values."),
            "repeat": Param("int", 1, doc="The repeating time of all elements."),
            "ctx": Param("str", "", doc="Context of output (ignored: the data's)."),
            "axis": Param("int", None, doc="Arange elements according to the size of a "
                                           "certain axis of input array; None: its whole "
                                           "shape.")},
    infer_shape=_shape, infer_type=lambda p, t: [t[0]],
    compute=computes(_layout_cpu.kernels()["arange_like"],
                     gpu_compute("mx_ops.ops.layout._layout_gpu", "arange_like")),
    pack_params=_pack,
    doc="Returns an array of evenly spaced values with the shape of the input (or of one "
        "of its axes)."))

set_gradient("_contrib_arange_like", lambda node, ograds: [zeros_like(node.inputs[0])])
