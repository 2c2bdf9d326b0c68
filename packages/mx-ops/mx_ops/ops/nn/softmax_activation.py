"""SoftmaxActivation (MXNet 1.x's deprecated softmax_activation-inl.h) on the
softmax kernels of softmax_cpu.h: mode 'instance' is a softmax along the
last axis (MXNet flattens the data to 2-D, (prod of the leading axes, last
axis)), mode 'channel' along axis 1 of data of rank 3 or more.  The
backward reads (out_grad, out_data), as softmax's, and sums along axis 1 in
both modes, as MXNet 1.9.1's does (its instance-mode backward views the
data as (batch, channel, rest)): for rank 2 that is the forward's axis, for
higher ranks in mode 'instance' it is MXNet's gradient, not the derivative
of the forward (tests/data/math_mxnet191.json holds MXNet's)."""
import math
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.nn.activation import _KERNELS

# The CuPy twin of softmax, imported on the first GPU call.
_SOFTMAX_GPU = "mx_ops.ops.nn._softmax_gpu"

_PARAMS = {"mode": Param("str", "instance", choices=("channel", "instance"),
                         doc="instance: softmax along the last axis; channel: along axis 1 "
                             "(data of rank 3 or more).")}


def _view(op, params, shape, backward=False):
    """(outer, n, inner) around the softmax axis, or ShapeError."""
    shape = tuple(shape)
    if backward and len(shape) >= 2:
        return shape[0], shape[1], math.prod(shape[2:])
    if params["mode"] == "channel":
        if len(shape) < 3:
            raise ShapeError(f"{op}: argument 'data' has shape {shape}; mode 'channel' needs "
                             f"at least 3 dimensions")
        return shape[0], shape[1], math.prod(shape[2:])
    if not shape:
        raise ShapeError(f"{op}: argument 'data' must have at least 1 dimension")
    return math.prod(shape[:-1]), shape[-1], 1


def _pack(op):
    def pack(params, shapes):
        view = _view(op, params, shapes[0], backward=op.startswith("_backward"))
        return struct.pack("=qqqdii", *view, 1.0, 0, 0)                       # SoftmaxParam
    return pack


def _shape(op, nin):
    def infer(params, shapes):
        for s in shapes[1:nin]:
            if tuple(s) != tuple(shapes[0]):
                raise ShapeError(f"{op}: argument 'out_data' has shape {tuple(s)}, which "
                                 f"differs from 'out_grad' {tuple(shapes[0])}")
        _view(op, params, shapes[0])
        return [tuple(shapes[0])]
    return infer


register(OpDef(
    "SoftmaxActivation", arguments=("data",), params=_PARAMS,
    infer_shape=_shape("SoftmaxActivation", 1),
    infer_type=same_float_types("SoftmaxActivation", lambda p: ["data"]),
    compute=computes(_KERNELS["softmax"], gpu_compute(_SOFTMAX_GPU, "softmax",
                                                      _pack("SoftmaxActivation"))),
    pack_params=_pack("SoftmaxActivation"), inplace=((0, 0),),
    doc="Softmax of the data (deprecated in MXNet: softmax with an axis is the same): "
        "mode 'instance' along the last axis, 'channel' along axis 1.  Backward: "
        "_backward_SoftmaxActivation(out_grad, out_data)."))

register(OpDef(
    "_backward_SoftmaxActivation", arguments=("out_grad", "out_data"), outputs=("data_grad",),
    params=_PARAMS, infer_shape=_shape("_backward_SoftmaxActivation", 2),
    infer_type=same_float_types("_backward_SoftmaxActivation",
                                lambda p: ["out_grad", "out_data"]),
    compute=computes(_KERNELS["softmax_backward"],
                     gpu_compute(_SOFTMAX_GPU, "softmax_backward",
                                 _pack("_backward_SoftmaxActivation"))),
    pack_params=_pack("_backward_SoftmaxActivation"), inplace=((0, 0),),
    differentiable=False,
    doc="Gradient of SoftmaxActivation from (out_grad, out_data): data_grad."))
