"""FullyConnected and _backward_FullyConnected with MXNet 1.x's names,
parameters and shape rules (src/operator/nn/fully_connected.cc).

out = data . weight^T + bias, with data flattened to (batch, rest) when
flatten=True, else seen as (..., in) rows; weight is (num_hidden, in), bias
(num_hidden,).  The bias input is absent with no_bias=True.

Backward convention (MXNet's FullyConnectedGrad): ``_backward_FullyConnected``
takes (out_grad, data, weight) with the forward's parameters and returns
(data_grad, weight_grad, bias_grad), bias_grad only without no_bias; each
output honours its own req.

The CPU kernels (fc_cpu.h) run the GEMM core of gemm_cpu.h split
over the cores, with their packing buffers in the op's workspace
(TEMP_SPACE), sized by ``_fc_cpu.workspace_bytes``."""
import math
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.nn import _fc_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_FC_GPU = "mx_ops.ops.nn._fc_gpu"

_KERNELS = _fc_cpu.kernels()
_PARAMS = {
    "num_hidden": Param("int", low=1, doc="Number of hidden nodes of the output."),
    "no_bias": Param("bool", False, doc="Whether to disable bias parameter."),
    "flatten": Param("bool", True, doc="Whether to collapse all but the first axis of the "
                                       "input data tensor."),
}
_FC_TYPES = ("float32", "float64")


def _names(params):
    return ["data", "weight"] if params["no_bias"] else ["data", "weight", "bias"]


def _rows(op, params, data):
    """(M, K, output shape) of ``data`` under ``flatten``."""
    data = tuple(data)
    if not data:
        raise ShapeError(f"{op}: argument 'data' must have at least one axis, got shape ()")
    if params["flatten"]:
        k = math.prod(data[1:])
        return data[0], k, (data[0], params["num_hidden"])
    return math.prod(data[:-1]), data[-1], data[:-1] + (params["num_hidden"],)


def _check_weights(op, params, k, weight, bias):
    want = (params["num_hidden"], k)
    if tuple(weight) != want:
        raise ShapeError(f"{op}: argument 'weight' has shape {tuple(weight)}, expected {want} "
                         f"(num_hidden={params['num_hidden']}, input size {k})")
    if bias is not None and tuple(bias) != (params["num_hidden"],):
        raise ShapeError(f"{op}: argument 'bias' has shape {tuple(bias)}, expected "
                         f"({params['num_hidden']},)")


def _fc_shape(params, shapes):
    _, k, out = _rows("FullyConnected", params, shapes[0])
    _check_weights("FullyConnected", params, k, shapes[1],
                   None if params["no_bias"] else shapes[2])
    return [out]


def _bwd_shape(params, shapes):
    op = "_backward_FullyConnected"
    og, data, weight = (tuple(s) for s in shapes)
    _, k, out = _rows(op, params, data)
    _check_weights(op, params, k, weight, None)
    if og != out:
        raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, expected {out} (the "
                         f"output of FullyConnected on 'data' {data})")
    return [data, weight] + ([] if params["no_bias"] else [(params["num_hidden"],)])


def _pack(params, shapes):
    m, k, _ = _rows("FullyConnected", params, shapes[0])
    return struct.pack("=iiqqq", params["no_bias"], 0, m, k, params["num_hidden"])


def _workspace(params, shapes):
    m, k, _ = _rows("FullyConnected", params, shapes[0])
    return _fc_cpu.workspace_bytes(False, m, k, params["num_hidden"])


def _bwd_workspace(params, shapes):
    m, k, _ = _rows("_backward_FullyConnected", params, shapes[1])
    return _fc_cpu.workspace_bytes(True, m, k, params["num_hidden"])


def _bwd_pack(params, shapes):
    m, k, _ = _rows("_backward_FullyConnected", params, shapes[1])
    return struct.pack("=iiqqq", params["no_bias"], 0, m, k, params["num_hidden"])


register(OpDef(
    "FullyConnected", arguments=("data", "weight", "bias"), list_input_names=_names,
    input_docs={"data": "Input data, (batch, ...) flattened to (batch, input size) with "
                        "flatten=True, else (..., input size).",
                "weight": "Weight matrix, (num_hidden, input size).",
                "bias": "Bias, (num_hidden,); not an input with no_bias=True."},
    params=_PARAMS, infer_shape=_fc_shape,
    infer_type=same_float_types("FullyConnected", _names, _FC_TYPES),
    compute=computes(_KERNELS["forward"], gpu_compute(_FC_GPU, "forward", _pack)),
    pack_params=_pack, resources=(ResourceRequest.TEMP_SPACE,), workspace=_workspace,
    doc="Applies a linear transformation: out = data . weight^T + bias.  Backward: "
        "_backward_FullyConnected(out_grad, data, weight) -> (data_grad, weight_grad"
        "[, bias_grad])."))

register(OpDef(
    "_backward_FullyConnected", arguments=("out_grad", "data", "weight"),
    outputs=lambda p: ["data_grad", "weight_grad"] + ([] if p["no_bias"] else ["bias_grad"]),
    params=_PARAMS, infer_shape=_bwd_shape,
    infer_type=same_float_types("_backward_FullyConnected",
                                lambda p: ["out_grad", "data", "weight"], _FC_TYPES,
                                nout=lambda p: 2 if p["no_bias"] else 3),
    compute=computes(_KERNELS["backward"], gpu_compute(_FC_GPU, "backward", _bwd_pack)),
    pack_params=_bwd_pack, resources=(ResourceRequest.TEMP_SPACE,), workspace=_bwd_workspace,
    differentiable=False,
    doc="Gradient of FullyConnected: inputs (out_grad, data, weight) with the forward's "
        "parameters; outputs (data_grad, weight_grad[, bias_grad without no_bias])."))
