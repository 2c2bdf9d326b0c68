"""L2Normalization and _backward_L2Normalization with MXNet 1.x's names and
parameters (src/operator/l2_normalization-inl.h).

y = x / sqrt(sum(x^2) + eps), the sum taken per mode:
- 'instance': over everything but axis 0; norm shape (batch,);
- 'channel':  over axis 1; norm shape data.shape with axis 1 set to 1;
- 'spatial':  over axes 2 and up; norm shape (batch, channels).
MXNet lists the outputs ("output", "norm") and shows one: the norm is a
hidden output kept for the backward, ``_backward_L2Normalization(out_grad,
out_data, norm) -> data_grad``, dx = (g - y * sum(g * y)) / norm, with the
sum over the same axes.  The norm's own gradient is not propagated.
"""
import math
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.layer import _layer_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LAYER_GPU = "mx_ops.ops.layer._layer_gpu"

_KERNELS = _layer_cpu.kernels()

PARAMS = {
    "eps": Param("float", 1e-10, doc="A small constant for numerical stability."),
    "mode": Param("str", "instance", choices=("channel", "instance", "spatial"),
                  doc="Specify the dimension along which to compute L2 norm."),
}


def geometry(op, params, data):
    """(outer, n, inner) around the summed axes, and the norm's shape."""
    data = tuple(data)
    mode = params["mode"]
    if mode == "instance":
        if not data:
            raise ShapeError(f"{op}: argument 'data' must have at least 1 dimension, got "
                             f"shape ()")
        return (data[0], math.prod(data[1:]), 1), data[:1]
    if len(data) < 3:
        raise ShapeError(f"{op}: mode '{mode}' needs 'data' of at least 3 dimensions "
                         f"(batch, channel, spatial...), got shape {data}")
    rest = math.prod(data[2:])
    if mode == "channel":
        return (data[0], data[1], rest), data[:1] + (1,) + data[2:]
    return (data[0] * data[1], rest, 1), data[:2]


def _pack(op):
    def pack(params, shapes):
        (outer, n, inner), _ = geometry(op, params, shapes[0])
        return struct.pack("=qqqd", outer, n, inner, params["eps"])   # mxop::L2NormParam
    return pack


def _bwd_shape(params, shapes):
    op = "_backward_L2Normalization"
    og, out, norm = (tuple(s) for s in shapes)
    _, want = geometry(op, params, out)
    if og != out:
        raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, which differs from "
                         f"'out_data' {out}")
    if norm != want:
        raise ShapeError(f"{op}: argument 'norm' has shape {norm}, expected {want} for "
                         f"'out_data' {out} in mode '{params['mode']}'")
    return [out]


register(OpDef(
    "L2Normalization", arguments=("data",), outputs=("output", "norm"), params=PARAMS,
    num_visible_outputs=1,
    infer_shape=lambda p, s: [tuple(s[0]), geometry("L2Normalization", p, s[0])[1]],
    infer_type=same_float_types("L2Normalization", lambda p: ["data"], nout=2),
    compute=computes(_KERNELS["l2norm"], gpu_compute(_LAYER_GPU, "l2_normalization",
                                                     _pack("L2Normalization"))),
    pack_params=_pack("L2Normalization"),
    doc="Normalize the input array using the L2 norm: out = data / sqrt(sum(data**2) + eps) "
        "per instance, channel or spatial position (mode).  Outputs (output, norm), of which "
        "'output' is visible.  Backward: _backward_L2Normalization(out_grad, out_data, "
        "norm)."))

register(OpDef(
    "_backward_L2Normalization", arguments=("out_grad", "out_data", "norm"),
    outputs=("data_grad",), params=PARAMS, infer_shape=_bwd_shape,
    infer_type=same_float_types("_backward_L2Normalization",
                                lambda p: ["out_grad", "out_data", "norm"]),
    compute=computes(_KERNELS["l2norm_backward"],
                     gpu_compute(_LAYER_GPU, "l2_normalization_backward",
                                 _pack("_backward_L2Normalization"))),
    pack_params=_pack("_backward_L2Normalization"), differentiable=False,
    doc="Gradient of L2Normalization's output from (out_grad, out_data, norm): "
        "data_grad."))


# The gradient: the norm (hidden output 1) gets no gradient of its own, as in
# MXNet.
set_gradient("L2Normalization", backward_op(
    "L2Normalization", lambda n, g: [g[0], n.outputs()[0], n.outputs()[1]]))


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _l2_normalization(params, ins, outs):
    """L2Normalization: the output has the data's shape, the norm that of
    the mode's kept axes."""
    data = ins[0]
    if data is None:
        return ins, outs
    outs.assign(0, data, why="the shape of 'data'")
    outs.assign(1, geometry("L2Normalization", params, data)[1],
                why=f"mode '{params['mode']}' on 'data' {data}")
    return ins, outs


set_infer_shape_partial("L2Normalization", _l2_normalization)
