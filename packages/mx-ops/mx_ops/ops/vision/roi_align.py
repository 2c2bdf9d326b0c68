"""_contrib_ROIAlign and _backward_ROIAlign with MXNet 1.x's names and
parameters (src/operator/contrib/roi_align-inl.h).

ROIAlign averages bilinear samples over each bin of each box of 'rois'
((num_rois, 5): [batch_index, x1, y1, x2, y2]) of the NCHW 'data': output
(num_rois, C, h, w), or with position_sensitive (num_rois, C / (h * w), h,
w).  The sampling rules are in roi_align_cpu.h.  The backward takes
(out_grad, data, rois): 'data' only for its shape.
"""
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.vision import _vision_cpu
from mx_ops.ops.vision.roi_pooling import PARAMS as _POOL_PARAMS
from mx_ops.ops.vision.roi_pooling import as_float32, check_rois

_VISION_GPU = "mx_ops.ops.vision._vision_gpu"
_KERNELS = _vision_cpu.kernels()

PARAMS = {
    "pooled_size": Param("shape", doc="ROI Align output roi feature map height and width: "
                                      "(h, w)"),
    "spatial_scale": _POOL_PARAMS["spatial_scale"],
    "sample_ratio": Param("int", -1, doc="Optional sampling ratio of ROI align, using adaptive "
                                         "size by default."),
    "position_sensitive": Param("bool", False,
                                doc="Whether to perform position-sensitive RoI pooling. "
                                    "PSRoIPooling is first proposaled by R-FCN and it can "
                                    "reduce the input channels by ph*pw times, where (ph, pw) "
                                    "is the pooled_size"),
    "aligned": Param("bool", False, doc="Center-aligned ROIAlign introduced in Detectron2. To "
                                        "enable, set aligned to True."),
}


def _out_shape(op, params, data, rois):
    out = check_rois(op, params, data, rois)
    if params["position_sensitive"]:
        bins = out[2] * out[3]
        if data[1] % bins:
            raise ShapeError(f"{op}: with position_sensitive the channels of 'data' ({data[1]}) "
                             f"must be a multiple of pooled_size[0] * pooled_size[1] ({bins})")
        out = (out[0], data[1] // bins) + out[2:]
    return out


def _pack(params, shapes):
    """mxop::RoiAlignParam."""
    h, w = params["pooled_size"]
    return struct.pack("=5qd", h, w, params["sample_ratio"], params["position_sensitive"],
                       params["aligned"], as_float32(params["spatial_scale"]))


def _backward_shape(params, shapes):
    op = "_backward_ROIAlign"
    og, data, rois = (tuple(s) for s in shapes)
    want = _out_shape(op, params, data, rois)
    if og != want:
        raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, expected {want}")
    return [data, rois]


_NAMES = ("data", "rois")
_BWD_NAMES = ("out_grad", "data", "rois")

register(OpDef(
    "_contrib_ROIAlign", arguments=_NAMES, params=PARAMS,
    input_docs={"data": "Input data to the pooling operator, a 4D Feature maps",
                "rois": "Bounding box coordinates, a 2D array, if batchid is less than 0, it "
                        "will be ignored."},
    infer_shape=lambda p, s: [_out_shape("_contrib_ROIAlign", p, s[0], s[1])],
    infer_type=same_float_types("_contrib_ROIAlign", lambda p: list(_NAMES)),
    compute=computes(_KERNELS["roi_align"], gpu_compute(_VISION_GPU, "roi_align", _pack)),
    pack_params=_pack,
    doc="This operator takes a 4D feature map as an input array and region proposals as "
        "`rois`, then align the feature map over sub-regions of input and produces a fixed-"
        "sized output array: each bin averages bilinearly interpolated samples (Mask R-CNN's "
        "ROIAlign; position_sensitive: R-FCN's).  Backward: _backward_ROIAlign."))

register(OpDef(
    "_backward_ROIAlign", arguments=_BWD_NAMES, outputs=("data_grad", "rois_grad"),
    params=PARAMS, infer_shape=_backward_shape,
    input_docs={"data": "ROIAlign's input data (read for its shape).",
                "rois": "ROIAlign's boxes."},
    infer_type=same_float_types("_backward_ROIAlign", lambda p: list(_BWD_NAMES), nout=2),
    compute=computes(_KERNELS["roi_align_backward"],
                     gpu_compute(_VISION_GPU, "roi_align_backward", _pack)),
    pack_params=_pack, differentiable=False,
    doc="Gradient of ROIAlign: each output gradient spread over the bilinear neighbours of "
        "its bin's samples; 'data' is read for its shape; the boxes get zero."))

set_gradient("_contrib_ROIAlign", backward_op(
    "ROIAlign", lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))


def _roi_align(params, ins, outs):
    """_contrib_ROIAlign: (num_rois, channels) + pooled_size once the ranks
    of 'data' and 'rois' are known."""
    data, rois = ins[0], ins[1]
    if not data or not rois:
        return ins, outs
    out = _out_shape("_contrib_ROIAlign", params, [d or 1 for d in data[:1]] + [data[1]]
                     + [d or 1 for d in data[2:]], [rois[0] or 1, rois[1] or 5])
    outs.assign(0, (rois[0], out[1] if data[1] else 0) + out[2:],
                why="(num_rois, channels) + pooled_size")
    return ins, outs


set_infer_shape_partial("_contrib_ROIAlign", _roi_align)
