"""SVMOutput, MXNet's support-vector-machine output layer
(src/operator/svm_output-inl.h): the forward copies 'data'; the backward
is the gradient of the L2-SVM (or, with use_linear, the L1-SVM) hinge
loss of the output against 'label' (svm_cpu.h has the formulas), not the
output gradient's.  'label' holds one class per row of data's last axis
(shape: data's without the last axis), in data's dtype.
``_backward_SVMOutput(label, out_data) -> (data_grad, label_grad = 0)``."""
import math
import struct

import numpy as np

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.loss import _svm_cpu
from mx_ops.ops.loss.loss import _unary_compute

_SVM_GPU = "mx_ops.ops.loss._svm_gpu"
_KERNELS = _svm_cpu.kernels()

_PARAMS = {
    "margin": Param("float", 1.0, doc="The loss function penalizes outputs that lie outside "
                                      "this margin. Default margin is 1."),
    "regularization_coefficient": Param("float", 1.0, doc="Regularization parameter for the "
                                                          "SVM. This balances the tradeoff "
                                                          "between coefficient size and error."),
    "use_linear": Param("bool", False, doc="Whether to use L1-SVM objective. L2-SVM objective "
                                           "is used by default."),
}


def _label_shape(op, data):
    data = tuple(data)
    if not data:
        raise ShapeError(f"{op}: argument 'data' must have at least 1 dimension, got shape ()")
    return data[:-1]


def _shape(params, shapes):
    want = _label_shape("SVMOutput", shapes[0])
    if tuple(shapes[1]) != want:
        raise ShapeError(f"SVMOutput: argument 'label' has shape {tuple(shapes[1])}; for 'data' "
                         f"of shape {tuple(shapes[0])} it must be {want}")
    return [tuple(shapes[0])]


def _backward_shape(params, shapes):
    label, out = tuple(shapes[0]), tuple(shapes[1])
    if label != _label_shape("_backward_SVMOutput", out):
        raise ShapeError(f"_backward_SVMOutput: argument 'label' has shape {label}; for "
                         f"'out_data' of shape {out} it must be {out[:-1]}")
    return [out, label]


def _pack(params, shapes):
    out = tuple(shapes[1])
    # margin and regularization_coefficient are float32 fields in MXNet.
    return struct.pack("=qqddii", math.prod(out[:-1]), out[-1] if out else 1,
                       float(np.float32(params["margin"])),
                       float(np.float32(params["regularization_coefficient"])),
                       params["use_linear"], 0)                    # mxop::SvmParam


register(OpDef(
    "SVMOutput", arguments=("data", "label"), params=_PARAMS, infer_shape=_shape,
    input_docs={"data": "Input data for SVM transformation.",
                "label": "Class label for the input data."},
    infer_type=same_float_types("SVMOutput", lambda p: ["data", "label"]),
    compute=_unary_compute("_copy"), inplace=((0, 0),),
    doc="Support Vector Machine based transformation on input, backprop L2-SVM: the output "
        "is 'data'; the backward gives the gradient of the L2-SVM (L1-SVM with use_linear) "
        "hinge loss against 'label' with 'margin' and 'regularization_coefficient', ignoring "
        "out_grad.  Backward: _backward_SVMOutput(label, out_data)."))

register(OpDef(
    "_backward_SVMOutput", arguments=("label", "out_data"), outputs=("data_grad", "label_grad"),
    params=_PARAMS, infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_SVMOutput", lambda p: ["label", "out_data"], nout=2),
    compute=computes(_KERNELS["backward"], gpu_compute(_SVM_GPU, "backward")),
    pack_params=_pack, differentiable=False,
    doc="Gradient of SVMOutput from (label, out_data): (data_grad, label_grad = 0)."))

# MXNet's backward reads the label and the output.
set_gradient("SVMOutput", backward_op("SVMOutput", lambda n, g: [n.inputs[1],
                                                                 n.outputs()[0]]))


def _partial(params, ins, outs):
    """SVMOutputProp::InferShape: the label is the data's shape without its
    last axis; the output is the data's shape."""
    if outs[0] is not None:
        ins.assign(0, outs[0], why="the shape of the output")
    data = ins[0]
    if data is not None and len(data):
        ins.assign(1, tuple(data)[:-1], why=f"one class per row of 'data' {tuple(data)}")
        outs.assign(0, data, why="the shape of 'data'")
    return ins, outs


set_infer_shape_partial("SVMOutput", _partial)
