"""softmax_cross_entropy (MXNet 1.x's loss_binary_op): the summed
cross-entropy of softmax(data) against class indices, output shape (1,).
Kernels in softmax_ce_cpu.h and its CuPy twin; the gradient reads
(out_grad, data, label): out_grad * (softmax(data) - one_hot(label)), and a
zero label gradient."""
from mx_ops.core._nn_common import same_float_types
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.loss import _softmax_ce_cpu

_KERNELS = _softmax_ce_cpu.kernels()
_SOFTMAX_CE_GPU = "mx_ops.ops.loss._softmax_ce_gpu"


def check_shapes(op, data, label):
    """MXNet's rules: 2-D data (batch, classes), 1-D label of batch size."""
    data, label = tuple(data), tuple(label)
    if len(data) != 2:
        raise ShapeError(f"{op}: argument 'data' has shape {data}; it must be 2-D "
                         f"(batch, classes)")
    if len(label) != 1 or label[0] != data[0]:
        raise ShapeError(f"{op}: argument 'label' has shape {label}; it must be "
                         f"({data[0]},), one class index per row of 'data' {data}")


def _shape(params, shapes):
    check_shapes("softmax_cross_entropy", shapes[0], shapes[1])
    return [(1,)]


def _bwd_shape(params, shapes):
    check_shapes("_backward_softmax_cross_entropy", shapes[1], shapes[2])
    return [tuple(shapes[1]), tuple(shapes[2])]


register(OpDef(
    "softmax_cross_entropy", arguments=("data", "label"),
    input_docs={"data": "Input data, (batch, classes).",
                "label": "Input label: class indices (batch,), in data's dtype."},
    infer_shape=_shape,
    infer_type=same_float_types("softmax_cross_entropy", lambda p: ["data", "label"]),
    compute=computes(_KERNELS["forward"], gpu_compute(_SOFTMAX_CE_GPU, "forward")),
    doc="Calculate cross entropy of softmax output and one-hot label: "
        "sum over rows of -log(softmax(data)[row, label[row]]), shape (1,).  Labels are "
        "truncated to integers and clipped to [0, classes - 1].  Backward: "
        "_backward_softmax_cross_entropy(out_grad, data, label)."))

register(OpDef(
    "_backward_softmax_cross_entropy", arguments=("out_grad", "data", "label"),
    outputs=("data_grad", "label_grad"), infer_shape=_bwd_shape,
    infer_type=same_float_types("_backward_softmax_cross_entropy",
                                lambda p: ["out_grad", "data", "label"], nout=2),
    compute=computes(_KERNELS["backward"], gpu_compute(_SOFTMAX_CE_GPU, "backward")),
    differentiable=False,
    doc="Gradient of softmax_cross_entropy: out_grad[0] * (softmax(data) - one_hot(label)), "
        "and zeros for the label."))
