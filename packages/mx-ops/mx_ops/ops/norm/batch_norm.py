"""BatchNorm and _backward_BatchNorm with MXNet 1.x's names, parameters,
shapes and types (src/operator/nn/batch_norm.cc).

Inputs (data, gamma, beta, moving_mean, moving_var); the last two are
auxiliary states, updated in place by a training call (``mx_ops.core.training``
on, use_global_stats off) with
``moving = moving * momentum + batch_stat * (1 - momentum)`` (the batch
variance is the biased one).  Outputs (output, mean, var): 'var' holds the
inverse standard deviation 1/sqrt(var + eps), as in MXNet; mean and var are
hidden unless output_mean_var.  float16 data takes float32 gamma, beta and
moving statistics (MXNet's rule, from cuDNN); other dtypes take their own.

Backward (MXNet's legacy convention): ``_backward_BatchNorm(out_grad, mean,
var, data, gamma, beta, moving_mean, moving_var)`` with the forward's
parameters gives (data_grad, gamma_grad, beta_grad); it uses the saved batch
statistics in training and the moving ones otherwise (see
batch_norm_cpu.h for the formulas)."""
import math
import struct

import numpy as np

from mx_ops.core._nn_common import FLOATS
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.norm import _batch_norm_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_BATCH_NORM_GPU = "mx_ops.ops.norm._batch_norm_gpu"

_KERNELS = _batch_norm_cpu.kernels()
ARGUMENTS = ("data", "gamma", "beta", "moving_mean", "moving_var")
BACKWARD_ARGUMENTS = ("out_grad", "mean", "var", "data", "gamma", "beta", "moving_mean",
                      "moving_var")

_PARAMS = {
    "eps": Param("float", 1e-3, low=0.0, doc="Epsilon to prevent div 0."),
    "momentum": Param("float", 0.9, doc="Momentum for moving average."),
    "fix_gamma": Param("bool", True, doc="Fix gamma while training (gamma is taken as 1 and "
                                         "gets a zero gradient)."),
    "use_global_stats": Param("bool", False, doc="Whether use global moving statistics "
                                                 "instead of local batch-norm."),
    "output_mean_var": Param("bool", False, doc="Output the mean and inverse std."),
    "axis": Param("int", 1, doc="Specify which shape axis the channel is specified."),
    "cudnn_off": Param("bool", False, doc="Do not select CUDNN operator (no effect here)."),
    "min_calib_range": Param("float", None, doc="Accepted for quantization graphs; unused."),
    "max_calib_range": Param("float", None, doc="Accepted for quantization graphs; unused."),
}


def geometry(op, params, data):
    """(outer, channels, inner) of ``data`` around the channel axis, or a
    ShapeError naming the argument."""
    data = tuple(data)
    axis = params["axis"]
    if not data:
        raise ShapeError(f"{op}: argument 'data' must have at least one dimension, got "
                         f"shape ()")
    if not -len(data) <= axis < len(data):
        raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for 'data' of shape "
                         f"{data}")
    axis %= len(data)
    return math.prod(data[:axis]), data[axis], math.prod(data[axis + 1:])


def param_dtype(data_dtype):
    """The dtype of gamma, beta, the moving and the saved statistics."""
    return "float32" if data_dtype == "float16" else data_dtype


def _check_vectors(op, names, shapes, chans, data):
    for name, s in zip(names, shapes):
        if tuple(s) != (chans,):
            raise ShapeError(f"{op}: argument '{name}' has shape {tuple(s)}; for 'data' of "
                             f"shape {tuple(data)} it must be ({chans},), one value per channel")


def _forward_shape(params, shapes):
    _, chans, _ = geometry("BatchNorm", params, shapes[0])
    _check_vectors("BatchNorm", ARGUMENTS[1:], shapes[1:], chans, shapes[0])
    return [tuple(shapes[0]), (chans,), (chans,)]


def _backward_shape(params, shapes):
    op = "_backward_BatchNorm"
    og, data = tuple(shapes[0]), tuple(shapes[3])
    if og != data:
        raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, which differs from "
                         f"'data' {data}")
    _, chans, _ = geometry(op, params, data)
    names = [n for n in BACKWARD_ARGUMENTS if n not in ("out_grad", "data")]
    _check_vectors(op, names, [s for i, s in enumerate(shapes) if i not in (0, 3)], chans,
                   data)
    return [data, (chans,), (chans,)]


def _types(op, names, data_index, nout_data):
    def infer(params, dtypes):
        data = dtypes[data_index]
        if data not in FLOATS:
            raise TypeInferenceError(f"{op}: argument 'data' has dtype {data}; supported: "
                                     f"{', '.join(FLOATS)}")
        want = param_dtype(data)
        for name, d in zip(names, dtypes):
            expect = data if name in ("data", "out_grad") else want
            if d != expect:
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {d}; for 'data' "
                                         f"of dtype {data} it must be {expect}")
        return [data] * nout_data + [want] * (3 - nout_data)
    return infer


def pack(data_index, v1=False):
    """The packer of BatchNormParam (batch_norm_cpu.h); ``v1``: BatchNorm_v1's
    conventions (channel axis 1, eps a float32 field)."""
    def packer(params, shapes):
        if v1:
            params = dict(params, axis=1, eps=float(np.float32(params["eps"])))
        outer, chans, inner = geometry("BatchNorm", params, shapes[data_index])
        # momentum is a float32 field in MXNet; eps a double.
        return struct.pack("=qqqddiiii", outer, chans, inner, params["eps"],
                           float(np.float32(params["momentum"])), params["fix_gamma"],
                           params["use_global_stats"], v1, 0)      # BatchNormParam
    return packer


def workspace(data_index, v1=False):
    """The size function of the kernels' temporary space."""
    def size(params, shapes):
        if v1:
            params = dict(params, axis=1)
        _, chans, _ = geometry("BatchNorm", params, shapes[data_index])
        return 8 * max(1, _batch_norm_cpu.workspace_doubles(chans))
    return size


register(OpDef(
    "BatchNorm", arguments=ARGUMENTS, outputs=("output", "mean", "var"), params=_PARAMS,
    input_docs={"data": "Input data, the channels along 'axis'.",
                "gamma": "Scale per channel, (channels,).",
                "beta": "Shift per channel, (channels,).",
                "moving_mean": "Running mean per channel, (channels,), an auxiliary state "
                               "updated in place in training.",
                "moving_var": "Running variance per channel, (channels,), an auxiliary "
                              "state updated in place in training."},
    infer_shape=_forward_shape, infer_type=_types("BatchNorm", ARGUMENTS, 0, 1),
    compute=computes(_KERNELS["forward"], gpu_compute(_BATCH_NORM_GPU, "forward")),
    pack_params=pack(0), resources=(ResourceRequest.TEMP_SPACE,), workspace=workspace(0),
    num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1,
    mutate_inputs=(3, 4), aux_states=("moving_mean", "moving_var"),
    doc="Batch normalization: normalizes each channel (along 'axis') by the batch's mean "
        "and variance in training, or by moving_mean and moving_var in inference (or with "
        "use_global_stats), then scales by gamma (1 with fix_gamma) and shifts by beta.  "
        "Training updates moving_mean and moving_var in place with 'momentum'.  Outputs "
        "(output, mean, var), where var is the inverse standard deviation; mean and var are "
        "returned only with output_mean_var.  Backward: _backward_BatchNorm."))

register(OpDef(
    "_backward_BatchNorm", arguments=BACKWARD_ARGUMENTS,
    outputs=("data_grad", "gamma_grad", "beta_grad"), params=_PARAMS,
    infer_shape=_backward_shape,
    infer_type=_types("_backward_BatchNorm", BACKWARD_ARGUMENTS, 3, 1),
    compute=computes(_KERNELS["backward"], gpu_compute(_BATCH_NORM_GPU, "backward")),
    pack_params=pack(3), resources=(ResourceRequest.TEMP_SPACE,), workspace=workspace(3),
    differentiable=False,
    doc="Gradient of BatchNorm from (out_grad, mean, var, data, gamma, beta, moving_mean, "
        "moving_var) with the forward's parameters: (data_grad, gamma_grad, beta_grad)."))


# The gradient: BatchNorm's backward reads the saved mean and inverse std
# (outputs 1 and 2), the inputs and the moving statistics; the aux states get
# no gradient (MXNet's _NoGradient), and neither do the mean and var outputs.
_bn_backward = backward_op("BatchNorm", lambda n, g: [g[0], n.outputs()[1], n.outputs()[2],
                                                      *n.inputs])
set_gradient("BatchNorm", lambda node, ograds: _bn_backward(node, ograds) + [None, None])


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _batch_norm(params, ins, outs):
    """BatchNormShape: gamma, beta, moving_mean, moving_var, mean and var
    hold one value per channel (the data's 'axis'); the output is the
    data's shape."""
    data = ins[0]
    if data is None:
        return ins, outs
    _, chans, _ = geometry("BatchNorm", params, data)
    why = f"one value per channel of 'data' {data} along axis {params['axis']}"
    for i in range(1, 5):
        ins.assign(i, (chans,), why=why)
    outs.assign(0, data, why="the shape of 'data'")
    outs.assign(1, (chans,), why=why)
    outs.assign(2, (chans,), why=why)
    return ins, outs


def _batch_norm_types(params, ins, outs):
    """BatchNormType: the data's dtype from the output's when unknown; gamma,
    beta, the moving and the saved statistics float32 for float16 data,
    else the data's dtype."""
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    ins.assign(0, data)
    if data not in FLOATS:
        raise TypeInferenceError(f"BatchNorm: argument 'data' has dtype {data}; supported: "
                                 f"{', '.join(FLOATS)}")
    want = param_dtype(data)
    why = f"for 'data' of dtype {data}"
    for i in range(1, 5):
        ins.assign(i, want, why=why)
    outs.assign(0, data, why=why)
    outs.assign(1, want, why=why)
    outs.assign(2, want, why=why)
    return ins, outs


set_infer_shape_partial("BatchNorm", _batch_norm)
set_infer_type_partial("BatchNorm", _batch_norm_types)
