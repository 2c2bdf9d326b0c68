"""_contrib_AdaptiveAvgPooling2D and _backward_contrib_AdaptiveAvgPooling2D
with MXNet 1.x's names and parameters
(src/operator/contrib/adaptive_avg_pooling-inl.h).

Each output pixel of the NCHW output averages the input window that the
output size cuts out (adaptive_pool_cpu.h).  output_size () gives 1 x 1,
(s,) gives s x s, (h, w) gives h x w; a longer tuple gives 1 x 1, as in
MXNet.  The backward takes (out_grad, data): 'data' for its shape.
"""
from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.vision import _vision_cpu

_VISION_GPU = "mx_ops.ops.vision._vision_gpu"
_KERNELS = _vision_cpu.kernels()
_OP, _BWD = "_contrib_AdaptiveAvgPooling2D", "_backward_contrib_AdaptiveAvgPooling2D"

PARAMS = {
    "output_size": Param("shape", (), doc="int (output size) or a tuple of int for output "
                                          "(height, width)."),
}


def _size(params):
    s = tuple(params["output_size"])
    return (s[0], s[0]) if len(s) == 1 else s if len(s) == 2 else (1, 1)


def out_shape(op, params, data, partial=False):
    """(N, C) + the output size; ``partial``: 0 marks an unknown size."""
    data = tuple(data)
    if len(data) != 4:
        raise ShapeError(f"{op}: argument 'data' must be 4-d (batch, channel, height, width), "
                         f"got shape {data}")
    h, w = _size(params)
    if min(h, w) < 0:
        raise ShapeError(f"{op}: 'output_size' {params['output_size']} is negative")
    if not partial and h and w and not (data[2] and data[3]):
        raise ShapeError(f"{op}: argument 'data' of shape {data} is empty; it cannot be "
                         f"pooled to ({h}, {w})")
    return data[:2] + (h, w)


def _backward_shape(params, shapes):
    og, data = (tuple(s) for s in shapes)
    want = out_shape(_BWD, params, data)
    if og != want:
        raise ShapeError(f"{_BWD}: argument 'out_grad' has shape {og}, expected {want}")
    return [data]


register(OpDef(
    _OP, arguments=("data",), params=PARAMS, input_docs={"data": "Input data"},
    infer_shape=lambda p, s: [out_shape(_OP, p, s[0])],
    infer_type=same_float_types(_OP, lambda p: ["data"]),
    compute=computes(_KERNELS["adaptive_avg_pool"],
                     gpu_compute(_VISION_GPU, "adaptive_avg_pool")),
    doc="Applies a 2D adaptive average pooling over a 4D input with the shape of (NCHW): "
        "the pooling windows are chosen for the desired output size (output_size: s for "
        "s x s, or (height, width)).  Backward: _backward_contrib_AdaptiveAvgPooling2D."))

register(OpDef(
    _BWD, arguments=("out_grad", "data"), params=PARAMS,
    input_docs={"data": "AdaptiveAvgPooling2D's input data (read for its shape)."},
    infer_shape=_backward_shape,
    infer_type=same_float_types(_BWD, lambda p: ["out_grad", "data"]),
    compute=computes(_KERNELS["adaptive_avg_pool_backward"],
                     gpu_compute(_VISION_GPU, "adaptive_avg_pool_backward")),
    differentiable=False,
    doc="Gradient of AdaptiveAvgPooling2D: each output gradient spread evenly over its "
        "window."))

set_gradient(_OP, backward_op("contrib_AdaptiveAvgPooling2D",
                              lambda n, g: [g[0], n.inputs[0]]))


def _adaptive(params, ins, outs):
    """(N, C) of 'data' and the output size once its rank is known."""
    data = ins[0]
    if data:
        outs.assign(0, out_shape(_OP, params, data, partial=True), why="'output_size'")
    return ins, outs


set_infer_shape_partial(_OP, _adaptive)
