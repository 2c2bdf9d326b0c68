"""ROIPooling and _backward_ROIPooling with MXNet 1.x's names and parameters
(src/operator/roi_pooling-inl.h).

ROIPooling max-pools each box of 'rois' (num_rois, 5): [batch_index, x1,
y1, x2, y2] in image coordinates, scaled by spatial_scale) of the NCHW
'data' into pooled_size (h, w) bins: output (num_rois, C, h, w).  A second,
hidden output 'maxidx' holds the flat position in the image plane of each
bin's maximum (as data's dtype; -1 for an empty bin), which the backward
reads: the gradient goes to those elements alone.  The kernels and the
rounding rules are in roi_pooling_cpu.h.

_backward_ROIPooling takes (out_grad, data, rois, maxidx): 'data' only for
its shape, which nothing else tells.
"""
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.vision import _vision_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_VISION_GPU = "mx_ops.ops.vision._vision_gpu"

_KERNELS = _vision_cpu.kernels()

PARAMS = {
    "pooled_size": Param("shape", doc="ROI pooling output shape (h,w) "),
    "spatial_scale": Param("float", low=0.0, high=1.0,
                           doc="Ratio of input feature map height (or w) to raw image height "
                               "(or w). Equals the reciprocal of total stride in "
                               "convolutional layers"),
}


def as_float32(v):
    """``v`` rounded to float32: MXNet's spatial_scale is a float."""
    return struct.unpack("=f", struct.pack("=f", v))[0]


def check_rois(op, params, data, rois):
    """Checks 4-d data, (num_rois, 5) rois and a 2-d pooled size; returns
    the output shape (num_rois, C, h, w)."""
    data, rois, size = tuple(data), tuple(rois), tuple(params["pooled_size"])
    if len(data) != 4:
        raise ShapeError(f"{op}: argument 'data' should be a 4D tensor (batch, channel, height, "
                         f"width), got shape {data}")
    if len(rois) != 2 or rois[1] != 5:
        raise ShapeError(f"{op}: argument 'rois' should be a 2D tensor of shape (num_rois, 5), "
                         f"got shape {rois}")
    if len(size) != 2 or min(size) < 1:
        raise ShapeError(f"{op}: 'pooled_size' must be two positive sizes (h, w), got {size}")
    return (rois[0], data[1]) + size


def _pack(params, shapes):
    """mxop::RoiPoolParam."""
    h, w = params["pooled_size"]
    return struct.pack("=qqd", h, w, as_float32(params["spatial_scale"]))


def _forward_shape(params, shapes):
    out = check_rois("ROIPooling", params, shapes[0], shapes[1])
    return [out, out]


def _backward_shape(params, shapes):
    op = "_backward_ROIPooling"
    og, data, rois, idx = (tuple(s) for s in shapes)
    want = check_rois(op, params, data, rois)
    for name, s in (("out_grad", og), ("maxidx", idx)):
        if s != want:
            raise ShapeError(f"{op}: argument '{name}' has shape {s}, expected {want}")
    return [data, rois]


_NAMES = ("data", "rois")
_BWD_NAMES = ("out_grad", "data", "rois", "maxidx")

register(OpDef(
    "ROIPooling", arguments=_NAMES, outputs=("output", "maxidx"), params=PARAMS,
    num_visible_outputs=1,
    input_docs={"data": "The input array to the pooling operator,  a 4D Feature maps ",
                "rois": "Bounding box coordinates, a 2D array of [[batch_index, x1, y1, x2, "
                        "y2]], where (x1, y1) and (x2, y2) are top left and bottom right "
                        "corners of designated region of interest. `batch_index` indicates the "
                        "index of corresponding image in the input array"},
    infer_shape=_forward_shape,
    infer_type=same_float_types("ROIPooling", lambda p: list(_NAMES), nout=2),
    compute=computes(_KERNELS["roi_pooling"], gpu_compute(_VISION_GPU, "roi_pooling", _pack)),
    pack_params=_pack,
    doc="Performs region of interest (ROI) pooling on the input array: each box of 'rois' "
        "is cut into pooled_size bins and each bin max-pooled, giving (num_rois, channel, "
        "pooled_h, pooled_w).  The hidden output 'maxidx' records where each maximum was."))

register(OpDef(
    "_backward_ROIPooling", arguments=_BWD_NAMES, outputs=("data_grad", "rois_grad"),
    params=PARAMS, infer_shape=_backward_shape,
    input_docs={"data": "ROIPooling's input data (read for its shape).",
                "rois": "ROIPooling's boxes.", "maxidx": "ROIPooling's hidden output maxidx."},
    infer_type=same_float_types("_backward_ROIPooling", lambda p: list(_BWD_NAMES), nout=2),
    compute=computes(_KERNELS["roi_pooling_backward"],
                     gpu_compute(_VISION_GPU, "roi_pooling_backward", _pack)),
    pack_params=_pack, differentiable=False,
    doc="Gradient of ROIPooling: each output gradient added to the element its bin's "
        "maximum came from (maxidx); 'data' is read for its shape; the boxes get zero."))

# The gradient: out_grad through maxidx; the boxes get none (zero), as in
# MXNet.
set_gradient("ROIPooling", backward_op(
    "ROIPooling", lambda n, g: [g[0], n.inputs[0], n.inputs[1], n.outputs()[1]]))


# --- partial inference (graph-level FInferShape: 0 = unknown) --------------------

def _roi_pooling(params, ins, outs):
    """ROIPooling: the output is (num_rois, C, h, w) once 'data' and 'rois'
    have their ranks (MXNet's ROIPoolingProp); both outputs agree."""
    data, rois = ins[0], ins[1]
    if not data or not rois:
        return ins, outs
    out = check_rois("ROIPooling", params, [d or 1 for d in data],
                     [rois[0] or 1, rois[1] or 5])
    out = (rois[0], data[1]) + out[2:]
    outs.assign(0, out, why="(num_rois, channel) + pooled_size")
    outs.assign(1, out, why="(num_rois, channel) + pooled_size")
    return ins, outs


set_infer_shape_partial("ROIPooling", _roi_pooling)
