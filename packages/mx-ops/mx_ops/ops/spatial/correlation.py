"""Correlation and _backward_Correlation with MXNet 1.x's names and
parameters (src/operator/correlation-inl.h): FlowNet's correlation layer
of two feature maps (N, C, H, W), see correlation_cpu.h.

With the inputs padded by pad_size to (pH, pW), border = max_displacement
+ (kernel_size - 1) // 2, the output is (N, (2R + 1)^2, ceil((pH - 2 border)
/ stride1), ceil((pW - 2 border) / stride1)) with R = max_displacement //
stride2.  MXNet lists the outputs ("output", "tmp1", "tmp2") and shows
one: tmp1 and tmp2 are the padded inputs, channels last (N, pH, pW, C).
The backward, _backward_Correlation(ograd, data1, data2), gives both
inputs' gradients (for is_multiply=False the sign of data1 - data2, +1 at
a tie, as in MXNet)."""
import math
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.spatial import _spatial_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SPATIAL_GPU = "mx_ops.ops.spatial._spatial_gpu"
_KERNELS = _spatial_cpu.kernels()

PARAMS = {
    "kernel_size": Param("int", 1, low=1, doc="kernel size for Correlation must be an odd "
                                              "number"),
    "max_displacement": Param("int", 1, low=0, doc="Max displacement of Correlation"),
    "stride1": Param("int", 1, low=1, doc="stride1 quantize data1 globally"),
    "stride2": Param("int", 1, low=1, doc="stride2 quantize data2 within the neighborhood "
                                          "centered around data1"),
    "pad_size": Param("int", 0, low=0, doc="pad for Correlation"),
    "is_multiply": Param("bool", True, doc="operation type is either multiplication or "
                                           "subduction"),
}


def geometry(op, params, data1, data2):
    """(top_h, top_w, R, G, padded (pH, pW)) of inputs of shapes data1 and data2."""
    data1, data2 = tuple(data1), tuple(data2)
    if len(data1) != 4 or data1 != data2:
        raise ShapeError(f"{op}: 'data1' and 'data2' must be 4-D (batch, channel, height, "
                         f"width) of one shape, got {data1} and {data2}")
    if params["kernel_size"] % 2 == 0:
        # MXNet documents it and, unchecked, reads past the padded input for an even one.
        raise ShapeError(f"{op}: argument 'kernel_size' must be odd, got "
                         f"{params['kernel_size']}")
    pad = params["pad_size"]
    ph, pw = data1[2] + 2 * pad, data1[3] + 2 * pad
    border = params["max_displacement"] + (params["kernel_size"] - 1) // 2
    s1 = params["stride1"]
    top_h, top_w = math.ceil((ph - 2 * border) / s1), math.ceil((pw - 2 * border) / s1)
    if top_h < 1 or top_w < 1:
        raise ShapeError(f"{op}: Correlation cannot be done with current settings: the "
                         f"neighborhood and kernel (border {border}) do not fit in the padded "
                         f"input ({ph}, {pw})")
    radius = params["max_displacement"] // params["stride2"]
    return top_h, top_w, radius, 2 * radius + 1, (ph, pw)


def _shape(params, shapes):
    top_h, top_w, _, g, (ph, pw) = geometry("Correlation", params, shapes[0], shapes[1])
    n, c = shapes[0][:2]
    return [(n, g * g, top_h, top_w), (n, ph, pw, c), (n, ph, pw, c)]


def _backward_shape(params, shapes):
    op = "_backward_Correlation"
    top_h, top_w, _, g, _ = geometry(op, params, shapes[1], shapes[2])
    want = (shapes[1][0], g * g, top_h, top_w)
    if tuple(shapes[0]) != want:
        raise ShapeError(f"{op}: 'ograd' has shape {tuple(shapes[0])}, expected {want}")
    return [tuple(shapes[1]), tuple(shapes[2])]


def pack(params, shapes):
    """mxop::CorrParam (shapes: the inputs'; data1 is the last but one)."""
    top_h, top_w, radius, g, _ = geometry("Correlation", params, shapes[-2], shapes[-1])
    return struct.pack("=10q", params["kernel_size"], params["max_displacement"],
                       params["stride1"], params["stride2"], params["pad_size"],
                       params["is_multiply"], top_h, top_w, radius, g)


register(OpDef(
    "Correlation", arguments=("data1", "data2"), outputs=("output", "tmp1", "tmp2"),
    params=PARAMS, num_visible_outputs=1,
    input_docs={"data1": "Input data1 to the correlation.",
                "data2": "Input data2 to the correlation."},
    infer_shape=_shape,
    infer_type=same_float_types("Correlation", lambda p: ["data1", "data2"], nout=3),
    compute=computes(_KERNELS["Correlation"], gpu_compute(_SPATIAL_GPU, "correlation", pack)),
    pack_params=pack,
    doc="Applies correlation to inputs: compares each kernel_size patch of data1 with the "
        "patches of data2 displaced by up to max_displacement (steps of stride2), by products "
        "(is_multiply) or absolute differences averaged over the patch and channels."))

register(OpDef(
    "_backward_Correlation", arguments=("ograd", "data1", "data2"),
    outputs=("data1_grad", "data2_grad"), params=PARAMS, infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_Correlation", lambda p: ["ograd", "data1", "data2"],
                                nout=2),
    compute=computes(_KERNELS["_backward_Correlation"],
                     gpu_compute(_SPATIAL_GPU, "correlation_backward", pack)),
    pack_params=pack, differentiable=False,
    doc="Correlation's gradients of 'data1' and 'data2' from the output's."))

# tmp1 and tmp2 (hidden outputs) take no gradient, as in MXNet.
set_gradient("Correlation", backward_op(
    "Correlation", lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))
