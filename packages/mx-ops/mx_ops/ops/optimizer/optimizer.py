"""The optimizer update operators sgd_update, sgd_mom_update, adam_update,
rmsprop_update and ftrl_update, with MXNet 1.x's names, parameters and
formulas (src/operator/optimizer_op-inl.h; see optimizer_cpu.h).

Each takes (weight, grad, states...) of one shape and float dtype and
returns the updated weight; the states (momentum, Adam's mean and var,
RMSProp's n, FTRL's z and n) are written in place.  The usual call
overwrites the weight too, ``mx.nd.sgd_update(w, g, lr=0.1, out=w)``: the
output may be input 0 (in-place option (0, 0)).  adam_update applies no bias
correction; MXNet's Python optimizer folds it into lr.  The operators are
not differentiable.  lazy_update matters only for row_sparse gradients
(sparse_update.py: their storage rules and kernels)."""
import struct

import numpy as np

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.partial_infer import same_shape, set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.optimizer import _optimizer_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_OPTIMIZER_GPU = "mx_ops.ops.optimizer._optimizer_gpu"

_KERNEL = _optimizer_cpu.kernels()["update"]
# Codes of optimizer_cpu.h.
KINDS = {"sgd_update": 0, "sgd_mom_update": 1, "adam_update": 2, "rmsprop_update": 3,
         "ftrl_update": 4}

_COMMON = {
    "lr": Param("float", doc="Learning rate."),
    "wd": Param("float", 0.0, doc="Weight decay augments the objective function with a "
                                  "regularization term that penalizes large weights."),
    "rescale_grad": Param("float", 1.0, doc="Rescale gradient to grad = rescale_grad*grad."),
    "clip_gradient": Param("float", -1.0, doc="Clip gradient to the range of [-clip_gradient, "
                                              "clip_gradient]; a negative value turns "
                                              "clipping off."),
}
_LAZY = {"lazy_update": Param("bool", True, doc="If true, lazy updates are applied if "
                                                "gradient's stype is row_sparse.")}

_INPUTS = {
    "weight": "The weights; the output is their update (out=weight updates them in place).",
    "grad": "The gradient of the loss with respect to weight.",
    "mom": "Momentum, updated in place.",
    "mean": "First moment estimate, updated in place.",
    "var": "Second moment estimate, updated in place.",
    "n": "Accumulated squared gradients (RMSProp's moving average, FTRL's sum), updated "
         "in place.",
    "z": "FTRL's z accumulator, updated in place.",
}

# name -> (inputs, the op's own parameters, names of its (a, b, c) slots, doc)
_OPS = {
    "sgd_update": (("weight", "grad"), dict(_LAZY), (),
                   "Update function for Stochastic Gradient Descent (SGD): weight = "
                   "(1 - lr*wd)*weight - lr*clip(rescale_grad*grad)."),
    "sgd_mom_update": (
        ("weight", "grad", "mom"),
        {"momentum": Param("float", 0.0, doc="The decay rate of momentum estimates."),
         **_LAZY},
        ("momentum",),
        "Momentum update function for SGD: mom = momentum*mom - lr*wd*weight - "
        "lr*clip(rescale_grad*grad); weight = weight + mom (mom is updated in place)."),
    "adam_update": (
        ("weight", "grad", "mean", "var"),
        {"beta1": Param("float", 0.9, doc="The decay rate for the 1st moment estimates."),
         "beta2": Param("float", 0.999, doc="The decay rate for the 2nd moment estimates."),
         "epsilon": Param("float", 1e-8, doc="A small constant for numerical stability."),
         **_LAZY},
        ("beta1", "beta2", "epsilon"),
        "Update function for Adam: g = clip(rescale_grad*grad + wd*weight); mean = "
        "beta1*mean + (1-beta1)*g; var = beta2*var + (1-beta2)*g^2; weight = weight - "
        "lr*mean/(sqrt(var) + epsilon).  No bias correction (mean and var in place)."),
    "rmsprop_update": (
        ("weight", "grad", "n"),
        {"gamma1": Param("float", 0.95, doc="The decay rate of momentum estimates."),
         "epsilon": Param("float", 1e-8, doc="A small constant for numerical stability."),
         "clip_weights": Param("float", -1.0, doc="Clip weights to the range of "
                                                  "[-clip_weights, clip_weights]; a negative "
                                                  "value turns clipping off.")},
        ("gamma1", "epsilon", "clip_weights"),
        "Update function for RMSProp (Tieleman & Hinton): g = clip(rescale_grad*grad + "
        "wd*weight); n = (1-gamma1)*g^2 + gamma1*n; weight = weight - lr*g/sqrt(n + "
        "epsilon), clipped to clip_weights (n in place)."),
    "ftrl_update": (
        ("weight", "grad", "z", "n"),
        {"lamda1": Param("float", 0.01, doc="The L1 regularization coefficient."),
         "beta": Param("float", 1.0, doc="Per-Coordinate Learning Rate beta.")},
        ("lamda1", "beta"),
        "Update function for the Follow the Regularized Leader (FTRL) optimizer: g = "
        "clip(rescale_grad*grad); z += g - (sqrt(n + g^2) - sqrt(n))*weight/lr; n += g^2; "
        "weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1) (z and "
        "n in place)."),
}


def _same_shapes(op, names):
    def infer(params, shapes):
        for name, s in zip(names[1:], shapes[1:]):
            if tuple(s) != tuple(shapes[0]):
                raise ShapeError(f"{op}: argument '{name}' has shape {tuple(s)}, which "
                                 f"differs from '{names[0]}' {tuple(shapes[0])}")
        return [tuple(shapes[0])]
    return infer


def values(op, params):
    """The seven OptParam numbers: lr, wd, rescale_grad, clip_gradient and the
    op's own (a, b, c), each rounded to float32 as MXNet's float fields are."""
    slots = _OPS[op][2]
    raw = [params["lr"], params["wd"], params["rescale_grad"], params["clip_gradient"],
           *[params[s] for s in slots]] + [0.0] * (3 - len(slots))
    return [float(np.float32(v)) for v in raw]


def _pack(op):
    def pack(params, shapes):
        return struct.pack("=7dii", *values(op, params), KINDS[op], 0)     # OptParam
    return pack


for _name, (_inputs, _own, _slots, _doc) in _OPS.items():
    _params = {"lr": _COMMON["lr"]}
    # MXNet's field order: lr, the op's own decay rates, then wd, rescale_grad,
    # clip_gradient, and the op's trailing options.
    _params.update({k: v for k, v in _own.items() if k not in ("lazy_update", "clip_weights")})
    _params.update({k: v for k, v in _COMMON.items() if k != "lr"})
    _params.update({k: v for k, v in _own.items() if k in ("lazy_update", "clip_weights")})
    register(OpDef(
        _name, arguments=_inputs, params=_params,
        input_docs={k: _INPUTS[k] for k in _inputs},
        infer_shape=_same_shapes(_name, _inputs),
        infer_type=same_float_types(_name, lambda p, names=_inputs: list(names)),
        compute=computes(_KERNEL, gpu_compute(_OPTIMIZER_GPU, "compute", _name)),
        pack_params=_pack(_name), inplace=((0, 0),),
        mutate_inputs=tuple(range(2, len(_inputs))), differentiable=False, doc=_doc))


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------
# Every input and the output share one shape (ElemwiseShape).
for _name in KINDS:
    set_infer_shape_partial(_name, same_shape())
