"""Dropout and _backward_Dropout with MXNet 1.x's names, parameters and
shapes (src/operator/nn/dropout-inl.h).

Outputs (output, mask); the mask is hidden.  It has the data's shape with
size 1 along ``axes`` (one draw shared along them, "variational" dropout)
and the data's dtype; kept elements hold 1/(1-p), dropped ones 0.  Dropout
applies in training (``mx_ops.core.training``) or with mode='always'; otherwise
the output is the data and the mask is ones.

The mask comes from the context's parallel random resource: each call
reserves one counter value per mask element when it is pushed and draws
element j from Philox (seed, offset + j) (dropout_cpu.h), so a seeded
run gives the same masks whatever the number of workers.

Backward: ``_backward_Dropout(out_grad, mask)`` = out_grad * mask
(broadcast along axes)."""
import math
import struct

import numpy as np

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.core.training import is_training
from mx_ops.ops.dropout import _dropout_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_DROPOUT_GPU = "mx_ops.ops.dropout._dropout_gpu"

_KERNELS = _dropout_cpu.kernels()

_PARAMS = {
    "p": Param("float", 0.5, low=0.0, high=1.0,
               doc="Fraction of the input that gets dropped out during training time."),
    "mode": Param("str", "training", choices=("training", "always"),
                  doc="Whether to only turn on dropout during training or to also turn on "
                      "for inference."),
    "axes": Param("shape", (), doc="Axes for variational dropout kernel: the same dropout is "
                                   "applied to elements along them."),
    "cudnn_off": Param("bool", False, doc="Whether to turn off cuDNN in dropout operator "
                                          "(no effect here)."),
}


def mask_shape(op, params, data):
    """The mask's shape: ``data`` with size 1 along the axes, or ShapeError."""
    data = tuple(data)
    shape = list(data)
    for a in params["axes"]:
        if not -len(data) <= a < len(data):
            raise ShapeError(f"{op}: argument 'axes' holds {a}, out of range for 'data' of "
                             f"shape {data}")
        shape[a] = 1
    return tuple(shape)


def keep_probability(params):
    """1 - p in float32, as MXNet's ``pkeep_ = 1.0f - param.p``."""
    return np.float32(1.0) - np.float32(params["p"])


def drops(params):
    """Whether a call pushed now drops elements (MXNet's pkeep < 1 and
    training or mode 'always')."""
    train = params.get("_is_train", None)
    train = is_training() if train is None else train
    return (train or params["mode"] == "always") and keep_probability(params) < 1


def _forward_shape(params, shapes):
    return [tuple(shapes[0]), mask_shape("Dropout", params, shapes[0])]


def _backward_shape(params, shapes):
    op = "_backward_Dropout"
    og, mask = tuple(shapes[0]), tuple(shapes[1])
    want = mask_shape(op, params, og)
    if mask != want:
        raise ShapeError(f"{op}: argument 'mask' has shape {mask}; for 'out_grad' of shape "
                         f"{og} and axes {tuple(params['axes'])} it must be {want}")
    return [og]


def _pack(params, shapes):
    return struct.pack("=fi", keep_probability(params), params["mode"] == "always")


register(OpDef(
    "Dropout", arguments=("data",), outputs=("output", "mask"), params=_PARAMS,
    infer_shape=_forward_shape,
    infer_type=same_float_types("Dropout", lambda p: ["data"], nout=2),
    compute=computes(_KERNELS["forward"], gpu_compute(_DROPOUT_GPU, "forward")),
    pack_params=_pack, inplace=((0, 0),), num_visible_outputs=1,
    resources=(ResourceRequest.PARALLEL_RANDOM,),
    # One counter value per mask element, only for calls that draw.
    random_draws=lambda p, s: math.prod(mask_shape("Dropout", p, s[0])) if drops(p) else 0,
    doc="Applies dropout: in training (or with mode='always') each element is zeroed with "
        "probability p and the rest are scaled by 1/(1-p); a draw is shared along 'axes'.  "
        "Otherwise the output is the input.  Outputs (output, mask), the mask hidden.  "
        "Backward: _backward_Dropout(out_grad, mask)."))

register(OpDef(
    "_backward_Dropout", arguments=("out_grad", "mask"), outputs=("data_grad",),
    params=_PARAMS, infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_Dropout", lambda p: ["out_grad", "mask"]),
    compute=computes(_KERNELS["backward"], gpu_compute(_DROPOUT_GPU, "backward")),
    inplace=((0, 0),), differentiable=False,
    doc="Gradient of Dropout from (out_grad, mask): out_grad * mask, the mask broadcast "
        "along the forward's axes."))


# The gradient: _backward_Dropout reads the out_grad and the mask (output 1).
set_gradient("Dropout", backward_op("Dropout", lambda n, g: [g[0], n.outputs()[1]]))


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _dropout(params, ins, outs):
    """Dropout: the output has the data's shape, the mask the data's with
    size 1 along 'axes'."""
    data = ins[0]
    if data is None:
        return ins, outs
    outs.assign(0, data, why="the shape of 'data'")
    outs.assign(1, mask_shape("Dropout", params, data),
                why=f"'data' {data} with size 1 along axes {tuple(params['axes'])}")
    return ins, outs


set_infer_shape_partial("Dropout", _dropout)
