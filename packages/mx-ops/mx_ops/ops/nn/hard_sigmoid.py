"""hard_sigmoid with MXNet 1.9.1's parameters (alpha 0.2, beta 0.5, float32
fields) and types (float16, float32, float64):
y = max(0, min(1, alpha * x + beta)).  Backward:
``_backward_hard_sigmoid(out_grad, data)`` -> alpha * out_grad where
0 < alpha * x + beta < 1, else 0 (hard_sigmoid_cpu.h)."""
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.nn import _hard_sigmoid_cpu

_HARD_SIGMOID_GPU = "mx_ops.ops.nn._hard_sigmoid_gpu"
_KERNELS = _hard_sigmoid_cpu.kernels()

_PARAMS = {
    "alpha": Param("float", 0.2, doc="Slope of hard sigmoid"),
    "beta": Param("float", 0.5, doc="Bias of hard sigmoid."),
}


def _pack(params, shapes):
    return struct.pack("=ff", params["alpha"], params["beta"])     # HardSigmoidParam


def _backward_shape(params, shapes):
    if tuple(shapes[0]) != tuple(shapes[1]):
        raise ShapeError(f"_backward_hard_sigmoid: argument 'out_grad' has shape "
                         f"{tuple(shapes[0])}, which differs from 'data' {tuple(shapes[1])}")
    return [tuple(shapes[1])]


register(OpDef(
    "hard_sigmoid", arguments=("data",), params=_PARAMS,
    input_docs={"data": "The input array."},
    infer_shape=lambda params, shapes: [tuple(shapes[0])],
    infer_type=same_float_types("hard_sigmoid", lambda p: ["data"]),
    compute=computes(_KERNELS["forward"], gpu_compute(_HARD_SIGMOID_GPU, "forward")),
    pack_params=_pack, inplace=((0, 0),),
    doc="Computes hard sigmoid of x element-wise: y = max(0, min(1, alpha * x + beta)).  "
        "Backward: _backward_hard_sigmoid."))

register(OpDef(
    "_backward_hard_sigmoid", arguments=("out_grad", "data"), params=_PARAMS,
    infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_hard_sigmoid", lambda p: ["out_grad", "data"]),
    compute=computes(_KERNELS["backward"], gpu_compute(_HARD_SIGMOID_GPU, "backward")),
    pack_params=_pack, inplace=((0, 0),), differentiable=False,
    doc="Gradient of hard_sigmoid: alpha * out_grad where 0 < alpha * data + beta < 1."))

set_gradient("hard_sigmoid", backward_op("hard_sigmoid", lambda n, g: [g[0], n.inputs[0]]))
