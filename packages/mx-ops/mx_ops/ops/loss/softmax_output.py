"""SoftmaxOutput (alias Softmax) and _backward_SoftmaxOutput with MXNet 1.x's
parameters and semantics (src/operator/softmax_output-inl.h).

The forward is a softmax over the classes of each row, by the softmax
kernel (ops/nn/softmax_cpu.h) with the data seen as (outer, classes, inner):
- default: data flattened to 2-D, (n, size / n, 1);
- preserve_shape: over the last axis, (size / last, last, 1);
- multi_output: over axis 1, (n, k, size / n / k), one label per (n, rest).

The backward is the gradient of the cross-entropy loss, not of the forward
output: out_grad is ignored unless out_grad=True, which multiplies by it.
With a label of data's shape (probabilities) it is (output - label) *
grad_scale.  Otherwise the label holds class indices (read as int) and
the gradient is (output - one_hot(label)) * grad_scale / normalizer, with
smooth_alpha taken from the label's 1 and spread over the other classes,
rows whose label is ignore_label zeroed with use_ignore, and MXNet's
normalizers: 'null' 1, 'batch' the label's length (its first dimension
with multi_output), 'valid' the labels that are not ignore_label (at least
1, counted whether or not use_ignore is set); with multi_output, 'null' and
'batch' also divide by the positions per sample.  The label's gradient is
zero.

``_backward_SoftmaxOutput`` reads what MXNet's DeclareBackwardDependency
declares: (ograd, label, out_data) with out_grad=True, else (label,
out_data); it returns (data_grad, label_grad), honouring each req.  The
output's gradient is named 'ograd' there, as the parameter 'out_grad'
takes the usual name.
"""
import math
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.loss import _loss_cpu
from mx_ops.ops.nn import _nn_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LOSS_GPU = "mx_ops.ops.loss._loss_gpu"

_SOFTMAX = _nn_cpu.kernels()["softmax"]
_BACKWARD = _loss_cpu.kernels()["softmax_output_backward"]
_NORMS = ("null", "batch", "valid")

PARAMS = {
    "grad_scale": Param("float", 1.0, doc="Scales the gradient by a float factor."),
    "ignore_label": Param("float", -1.0, doc="The instances whose labels == ignore_label "
                                             "will be ignored during backward, if use_ignore "
                                             "is set to true."),
    "multi_output": Param("bool", False, doc="If set to true, the softmax function will be "
                                             "computed along axis 1. This is applied when "
                                             "the shape of input array differs from the "
                                             "shape of label array."),
    "use_ignore": Param("bool", False, doc="If set to true, the ignore_label value will not "
                                           "contribute to the backward gradient."),
    "preserve_shape": Param("bool", False, doc="If set to true, the softmax function will be "
                                               "computed along the last axis (-1)."),
    "normalization": Param("str", "null", choices=_NORMS, doc="Normalizes the gradient."),
    "out_grad": Param("bool", False, doc="Multiplies gradient with output gradient "
                                         "element-wise."),
    "smooth_alpha": Param("float", 0.0, low=0.0, high=1.0,
                          doc="Constant for computing a label smoothed version of "
                              "cross-entropy for the backwards pass. This constant gets "
                              "subtracted from the one-hot encoding of the gold label and "
                              "distributed uniformly to all other labels."),
}


def geometry(op, params, data):
    """(outer, classes, inner) of ``data``: the softmax runs over the classes
    of each of the outer * inner rows (stride inner)."""
    data = tuple(data)
    if params["multi_output"]:
        if len(data) < 2:
            raise ShapeError(f"{op}: with multi_output=True argument 'data' needs at least 2 "
                             f"dimensions (batch, classes, ...), got shape {data}")
        return data[0], data[1], math.prod(data[2:])
    if not data:
        raise ShapeError(f"{op}: argument 'data' must have at least 1 dimension, got shape ()")
    if params["preserve_shape"]:
        return math.prod(data[:-1]), data[-1], 1
    return data[0], math.prod(data[1:]), 1


def check_label(op, params, data, label):
    """ShapeError unless ``label`` fits ``data`` (MXNet's InferShape);
    True when it holds probabilities (data's shape)."""
    data, label = tuple(data), tuple(label)
    geometry(op, params, data)
    if label == data:
        return True
    if params["multi_output"]:
        allowed = [(data[0], math.prod(data[2:])), data[:1] + data[2:],
                   data[:1] + (1,) + data[2:]]
        if label not in allowed:
            raise ShapeError(f"{op}: argument 'label' has shape {label}; with "
                             f"multi_output=True and 'data' {data} it must be "
                             f"{', '.join(map(str, dict.fromkeys(allowed)))} (class indices) "
                             f"or {data} (probabilities)")
        return False
    if label != data[:-1]:
        raise ShapeError(f"{op}: argument 'label' has shape {label}, expected {data[:-1]} "
                         f"(class indices: 'data' {data} without its last axis) or {data} "
                         f"(probabilities)")
    return False


def _forward_pack(params, shapes):
    outer, n, inner = geometry("SoftmaxOutput", params, shapes[0])
    return struct.pack("=qqqdii", outer, n, inner, 1.0, 0, 0)        # mxop::SoftmaxParam


def _shape(params, shapes):
    check_label("SoftmaxOutput", params, shapes[0], shapes[1])
    return [tuple(shapes[0])]


def _bwd_names(params):
    return (["ograd"] if params["out_grad"] else []) + ["label", "out_data"]


def backward_pack(params, shapes):
    """mxop::SoftmaxOutParam for _backward_SoftmaxOutput's input shapes."""
    op = "_backward_SoftmaxOutput"
    label, out = shapes[-2], shapes[-1]
    prob = check_label(op, params, out, label)
    outer, n, inner = geometry(op, params, out)
    scale = params["grad_scale"]
    norm = params["normalization"]
    if not prob:
        if params["multi_output"] and norm != "valid":
            scale /= max(inner, 1)
        if norm == "batch":
            scale /= max(label[0] if params["multi_output"] else math.prod(label), 1)
    return struct.pack("=4q3d4i", outer, n, inner, math.prod(label), scale,
                       params["ignore_label"], params["smooth_alpha"], prob,
                       params["use_ignore"], norm == "valid", params["out_grad"])


def _bwd_shape(params, shapes):
    op = "_backward_SoftmaxOutput"
    label, out = tuple(shapes[-2]), tuple(shapes[-1])
    check_label(op, params, out, label)
    if params["out_grad"] and tuple(shapes[0]) != out:
        raise ShapeError(f"{op}: argument 'ograd' has shape {tuple(shapes[0])}, which "
                         f"differs from 'out_data' {out}")
    return [out, label]


register(OpDef(
    "SoftmaxOutput", arguments=("data", "label"), params=PARAMS,
    input_docs={"label": "Class indices (data's shape without the class axis), or "
                         "probabilities of data's shape."},
    infer_shape=_shape,
    infer_type=same_float_types("SoftmaxOutput", lambda p: ["data", "label"]),
    compute=computes(_SOFTMAX, gpu_compute(_LOSS_GPU, "softmax_output", _forward_pack)),
    pack_params=_forward_pack, inplace=((0, 0),), aliases=("Softmax",),
    doc="Computes the softmax of 'data' and, in the backward pass, the gradient of the "
        "cross-entropy loss against 'label' (class indices, or probabilities of data's "
        "shape) with respect to 'data'.  The softmax runs over the flattened trailing axes "
        "by default, over the last axis with preserve_shape, over axis 1 with multi_output. "
        " Backward: _backward_SoftmaxOutput([ograd,] label, out_data)."))

register(OpDef(
    "_backward_SoftmaxOutput", arguments=("ograd", "label", "out_data"),
    list_input_names=_bwd_names, outputs=("data_grad", "label_grad"), params=PARAMS,
    infer_shape=_bwd_shape,
    infer_type=same_float_types("_backward_SoftmaxOutput", _bwd_names, nout=2),
    compute=computes(_BACKWARD, gpu_compute(_LOSS_GPU, "softmax_output_backward",
                                            backward_pack)),
    pack_params=backward_pack, differentiable=False,
    doc="Gradient of SoftmaxOutput's cross-entropy loss from ([ograd, the output's gradient, "
        "if out_grad=True,] label, out_data): (data_grad, label_grad = 0)."))
