"""BatchNorm_v1, MXNet's legacy batch normalization
(src/operator/batch_norm_v1-inl.h), on BatchNorm's kernels with their v1
flag (batch_norm_cpu.h).

Inputs (data, gamma, beta) and auxiliary states (moving_mean, moving_var);
data is 2-D (N, C) or 4-D (N, C, H, W), the channels on axis 1, float32
(the legacy operator's only type).  Outputs (output, mean, var), mean and
var visible with output_mean_var.  Where it differs from BatchNorm:

- 'var' is the batch variance (BatchNorm: the inverse std); in inference
  mean and var are moving_mean and moving_var;
- the forward leaves the moving statistics alone; the training *backward*
  updates them: ``moving = moving * momentum + saved * (1 - momentum)``;
- no 'axis', 'cudnn_off' or calibration parameters; eps is a float32 field.

MXNet's forward with fix_gamma also writes ones into the gamma array; here
gamma is read as 1 and left as it is.  Backward:
``_backward_BatchNorm_v1(out_grad, mean, var, data, gamma, beta, moving_mean,
moving_var)`` -> (data_grad, gamma_grad, beta_grad), BatchNorm's formulas."""
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.norm.batch_norm import _KERNELS, ARGUMENTS, BACKWARD_ARGUMENTS, pack, workspace
from mx_storage.resource import ResourceRequest

# BatchNorm's CuPy twin, whose forward_v1 / backward_v1 set the v1 flag.
_BATCH_NORM_GPU = "mx_ops.ops.norm._batch_norm_gpu"

_PARAMS = {
    "eps": Param("float", 1e-3, doc="Epsilon to prevent div 0"),
    "momentum": Param("float", 0.9, doc="Momentum for moving average"),
    "fix_gamma": Param("bool", True, doc="Fix gamma while training"),
    "use_global_stats": Param("bool", False, doc="Whether use global moving statistics "
                                                 "instead of local batch-norm. This will force "
                                                 "change batch-norm into a scale shift "
                                                 "operator."),
    "output_mean_var": Param("bool", False, doc="Output All,normal mean and var"),
}


def _channels(op, data):
    data = tuple(data)
    if len(data) not in (2, 4):
        raise ShapeError(f"{op}: argument 'data' has shape {data}; BatchNorm_v1 takes 2-D "
                         f"(batch, channel) or 4-D (batch, channel, height, width) data")
    return data[1]


def _forward_shape(params, shapes):
    c = _channels("BatchNorm_v1", shapes[0])
    for name, s in zip(ARGUMENTS[1:], shapes[1:]):
        if tuple(s) != (c,):
            raise ShapeError(f"BatchNorm_v1: argument '{name}' has shape {tuple(s)}; for "
                             f"'data' of shape {tuple(shapes[0])} it must be ({c},)")
    return [tuple(shapes[0]), (c,), (c,)]


def _backward_shape(params, shapes):
    data = tuple(shapes[3])
    if tuple(shapes[0]) != data:
        raise ShapeError(f"_backward_BatchNorm_v1: argument 'out_grad' has shape "
                         f"{tuple(shapes[0])}, which differs from 'data' {data}")
    c = _channels("_backward_BatchNorm_v1", data)
    for name, s in zip(BACKWARD_ARGUMENTS, shapes):
        if name not in ("out_grad", "data") and tuple(s) != (c,):
            raise ShapeError(f"_backward_BatchNorm_v1: argument '{name}' has shape "
                             f"{tuple(s)}; it must be ({c},)")
    return [data, (c,), (c,)]


def _types(op, names):
    def infer(params, dtypes):
        for name, d in zip(names, dtypes):
            if d != "float32":
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {d}; "
                                         f"BatchNorm_v1 supports float32 only")
        return ["float32"] * 3
    return infer


register(OpDef(
    "BatchNorm_v1", arguments=ARGUMENTS, outputs=("output", "mean", "var"), params=_PARAMS,
    input_docs={"data": "Input data to batch normalization", "gamma": "gamma array",
                "beta": "beta array",
                "moving_mean": "Running mean per channel, updated by the training backward.",
                "moving_var": "Running variance per channel, updated by the training "
                              "backward."},
    infer_shape=_forward_shape, infer_type=_types("BatchNorm_v1", ARGUMENTS),
    compute=computes(_KERNELS["forward"], gpu_compute(_BATCH_NORM_GPU, "forward_v1")),
    pack_params=pack(0, v1=True), resources=(ResourceRequest.TEMP_SPACE,),
    workspace=workspace(0, v1=True),
    num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1,
    # MXNet's legacy operators declare their aux states mutated (the v1
    # forward itself leaves them; its backward writes them).
    mutate_inputs=(3, 4), aux_states=("moving_mean", "moving_var"),
    doc="Batch normalization (MXNet's legacy BatchNorm_v1): normalizes each channel (axis 1 "
        "of 2-D or 4-D data) by the batch's mean and variance in training, or by the moving "
        "statistics in inference, then scales by gamma (1 with fix_gamma) and shifts by "
        "beta.  Outputs (output, mean, var), var the variance.  The moving statistics are "
        "updated by the training backward, _backward_BatchNorm_v1."))

register(OpDef(
    "_backward_BatchNorm_v1", arguments=BACKWARD_ARGUMENTS,
    outputs=("data_grad", "gamma_grad", "beta_grad"), params=_PARAMS,
    infer_shape=_backward_shape,
    infer_type=_types("_backward_BatchNorm_v1", BACKWARD_ARGUMENTS),
    compute=computes(_KERNELS["backward"], gpu_compute(_BATCH_NORM_GPU, "backward_v1")),
    pack_params=pack(3, v1=True), resources=(ResourceRequest.TEMP_SPACE,),
    workspace=workspace(3, v1=True), mutate_inputs=(6, 7), differentiable=False,
    doc="Gradient of BatchNorm_v1 from (out_grad, mean, var, data, gamma, beta, moving_mean, "
        "moving_var): (data_grad, gamma_grad, beta_grad); in training it also moves "
        "moving_mean and moving_var (in place) toward the saved mean and var."))

_backward = backward_op("BatchNorm_v1", lambda n, g: [g[0], n.outputs()[1], n.outputs()[2],
                                                      *n.inputs])
set_gradient("BatchNorm_v1", lambda node, ograds: _backward(node, ograds) + [None, None])


def _partial_shape(params, ins, outs):
    """gamma, beta, the moving and the saved statistics: one value per
    channel (axis 1) once the data's rank and channels are known."""
    if outs[0] is not None:
        ins.assign(0, outs[0], why="the shape of the output")
    data = ins[0]
    if data is None:
        return ins, outs
    outs.assign(0, data, why="the shape of 'data'")
    c = _channels("BatchNorm_v1", data)
    if c:
        why = f"one value per channel of 'data' {tuple(data)}"
        for i in range(1, 5):
            ins.assign(i, (c,), why=why)
        for i in (1, 2):
            outs.assign(i, (c,), why=why)
    return ins, outs


def _partial_type(params, ins, outs):
    for side in (ins, outs):
        for i in range(len(side)):
            if side[i] is not None and side[i] != "float32":
                raise TypeInferenceError(f"BatchNorm_v1: {side.describe(i)} has dtype "
                                         f"{side[i]}; BatchNorm_v1 supports float32 only")
            side.assign(i, "float32")
    return ins, outs


set_infer_shape_partial("BatchNorm_v1", _partial_shape)
set_infer_type_partial("BatchNorm_v1", _partial_type)
