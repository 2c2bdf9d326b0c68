"""Activation, LeakyReLU, softmax and log_softmax, and their backward
operators, with MXNet 1.x's names and parameters.

Backward conventions (inputs; outputs), each output honouring its req:
- ``_backward_Activation(out_grad, out_data; data_grad)``: every act_type's
  derivative is computed from the output, so the forward may run in place.
- ``_backward_LeakyReLU``: (out_grad, out_data; data_grad) for leaky, elu
  and selu; (out_grad, data; data_grad) for gelu, whose derivative needs the
  input; (out_grad, mask, out_data; data_grad) for rrelu (MXNet's
  DeclareBackwardDependency: the slopes and the output's sign); (out_grad,
  data, gamma; data_grad, gamma_grad) for prelu, whose gradient needs the
  input and the slopes.
- ``_backward_softmax`` / ``_backward_log_softmax(out_grad, out_data;
  data_grad)`` with the forward's axis and temperature.

LeakyReLU with act_type='rrelu' has outputs (output, mask), both visible
(MXNet's ListOutputs and NumVisibleOutputs: an mx.nd call returns the two).  In training
(``mx_ops.core.training``) each element's slope is drawn uniformly on
[lower_bound, upper_bound) from the context's RANDOM resource: the call
reserves one counter value per element when it is pushed and draws element
i from Philox (seed, offset + i) (leaky_relu_cpu.h), so a seeded run
gives the same slopes whatever the number of workers, on the CPU and on the
GPU.  The mask holds the slopes.  In inference the slope is the mean
(lower_bound + upper_bound) / 2, and the mask holds it; nothing is drawn."""
import math
import struct

import numpy as np

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param, ParamError
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.core.training import is_training
from mx_ops.ops.nn import _nn_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_ACT_GPU = "mx_ops.ops.nn._act_gpu"
_SOFTMAX_GPU = "mx_ops.ops.nn._softmax_gpu"

_KERNELS = _nn_cpu.kernels()

# Codes of activation_cpu.h (rrelu's: leaky_relu_cpu.h).  prelu has
# none: its kernels are told apart by the gamma input.
ACT_TYPES = {"relu": 0, "sigmoid": 1, "tanh": 2, "softrelu": 3, "softsign": 4}
LEAKY_TYPES = {"leaky": 5, "elu": 6, "selu": 7, "rrelu": 8, "gelu": 9, "prelu": -1}


def _same_shape(op, names):
    def infer(params, shapes):
        args = names(params)
        for name, s in zip(args[1:], shapes[1:]):
            if tuple(s) != tuple(shapes[0]):
                raise ShapeError(f"{op}: argument '{name}' has shape {tuple(s)}, which "
                                 f"differs from '{args[0]}' {tuple(shapes[0])}")
        return [tuple(shapes[0])]
    return infer


# --- Activation ---------------------------------------------------------------
_ACT_PARAMS = {"act_type": Param("str", choices=tuple(ACT_TYPES),
                                 doc="Activation function to be applied.")}


def _act_pack(params, shapes):
    return struct.pack("=iid", ACT_TYPES[params["act_type"]], 0, 0.0)     # ActParam


register(OpDef(
    "Activation", arguments=("data",), params=_ACT_PARAMS,
    infer_shape=lambda p, s: [tuple(s[0])],
    infer_type=same_float_types("Activation", lambda p: ["data"]),
    compute=computes(_KERNELS["activation"], gpu_compute(_ACT_GPU, "activation", _act_pack)),
    pack_params=_act_pack, inplace=((0, 0),),
    doc="Applies an activation function element-wise: relu max(x, 0), sigmoid "
        "1/(1+exp(-x)), tanh, softrelu log(1+exp(x)), softsign x/(1+|x|).  Backward: "
        "_backward_Activation(out_grad, out_data)."))

register(OpDef(
    "_backward_Activation", arguments=("out_grad", "out_data"), outputs=("data_grad",),
    params=_ACT_PARAMS,
    infer_shape=_same_shape("_backward_Activation", lambda p: ["out_grad", "out_data"]),
    infer_type=same_float_types("_backward_Activation", lambda p: ["out_grad", "out_data"]),
    compute=computes(_KERNELS["activation_backward"],
                     gpu_compute(_ACT_GPU, "activation_backward", _act_pack)),
    pack_params=_act_pack,
    inplace=((0, 0),), differentiable=False,
    doc="Gradient of Activation from (out_grad, out_data): data_grad."))


# --- LeakyReLU ----------------------------------------------------------------
_LEAKY_PARAMS = {
    "act_type": Param("str", "leaky", choices=tuple(LEAKY_TYPES),
                      doc="Activation function to be applied."),
    "slope": Param("float", 0.25, doc="Init slope for the activation (leaky and elu)."),
    "lower_bound": Param("float", 0.125, doc="Lower bound of random slope (rrelu)."),
    "upper_bound": Param("float", 0.334, doc="Upper bound of random slope (rrelu)."),
}


def _leaky_names(params):
    return ["data", "gamma"] if params["act_type"] == "prelu" else ["data"]


def _leaky_outputs(params):
    return ["output", "mask"] if params["act_type"] == "rrelu" else ["output"]


def _leaky_bwd_names(params):
    if params["act_type"] == "prelu":
        return ["out_grad", "data", "gamma"]
    if params["act_type"] == "rrelu":
        return ["out_grad", "mask", "out_data"]
    if params["act_type"] == "gelu":
        return ["out_grad", "data"]
    return ["out_grad", "out_data"]


def rrelu_bounds(params):
    """rrelu's (lower_bound, upper_bound) as the kernels draw with them:
    float32 (MXNet's float parameters), finite, lower <= upper; else
    ParamError."""
    with np.errstate(over="ignore"):
        lower, upper = np.float32(params["lower_bound"]), np.float32(params["upper_bound"])
    if not (np.isfinite(lower) and np.isfinite(upper) and lower <= upper):
        raise ParamError(f"LeakyReLU: arguments 'lower_bound' {params['lower_bound']} and "
                         f"'upper_bound' {params['upper_bound']} must be finite float32 values "
                         f"with lower_bound <= upper_bound (act_type 'rrelu')")
    return lower, upper


def rrelu_draws(params, in_shapes):
    """Counter values a LeakyReLU call consumes: one per element for rrelu
    in training, none otherwise (inference uses the mean slope)."""
    if params["act_type"] != "rrelu":
        return 0
    train = params.get("_is_train", None)
    if not (is_training() if train is None else train):
        return 0
    return math.prod(in_shapes[0])


def _check_gamma(op, data, gamma):
    data, gamma = tuple(data), tuple(gamma)
    chans = data[1] if len(data) >= 2 else 1
    if gamma not in ((1,), (chans,)):
        raise ShapeError(f"{op}: argument 'gamma' has shape {gamma}; for 'data' {data} it "
                         f"must be ({chans},) (one slope per channel, axis 1) or (1,)")


def _leaky_shape(params, shapes):
    if params["act_type"] == "prelu":
        _check_gamma("LeakyReLU", shapes[0], shapes[1])
    if params["act_type"] == "rrelu":
        rrelu_bounds(params)
    return [tuple(shapes[0])] * len(_leaky_outputs(params))


def _leaky_pack(params, shapes):
    """mxop::LeakyParam (leaky_relu_cpu.h): the act code, the effective
    slope (rrelu's inference mean) and rrelu's bounds."""
    act = params["act_type"]
    slope, lower, upper = params["slope"], 0.0, 0.0
    if act == "rrelu":
        slope = (params["lower_bound"] + params["upper_bound"]) / 2
        lower, upper = rrelu_bounds(params)
    return struct.pack("=iidff", LEAKY_TYPES[act], 0, slope, lower, upper)


def _leaky_bwd_shape(params, shapes):
    op = "_backward_LeakyReLU"
    if params["act_type"] == "prelu":
        og, data, gamma = (tuple(s) for s in shapes)
        if og != data:
            raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, which differs from "
                             f"'data' {data}")
        _check_gamma(op, data, gamma)
        return [data, gamma]
    return _same_shape(op, _leaky_bwd_names)(params, shapes)


register(OpDef(
    "LeakyReLU", arguments=("data", "gamma"), list_input_names=_leaky_names,
    input_docs={"gamma": "The learned slope per channel (axis 1), (channels,) or (1,); an "
                         "input only with act_type='prelu'."},
    outputs=_leaky_outputs,
    params=_LEAKY_PARAMS, infer_shape=_leaky_shape,
    infer_type=same_float_types("LeakyReLU", _leaky_names,
                                nout=lambda p: len(_leaky_outputs(p))),
    compute=computes(_KERNELS["leaky"], gpu_compute(_ACT_GPU, "leaky", _leaky_pack)),
    pack_params=_leaky_pack,
    # MXNet's kRandom, which only rrelu draws from (random_draws is 0 else).
    resources=(ResourceRequest.RANDOM,), random_draws=rrelu_draws,
    doc="Leaky rectified linear units: leaky x>0 ? x : slope*x; elu x>0 ? x : "
        "slope*(exp(x)-1); selu lambda*(x>0 ? x : alpha*(exp(x)-1)); gelu "
        "0.5*x*(1+erf(x/sqrt(2))) (computed in float32); prelu with a learned "
        "slope per channel (input gamma); rrelu x>0 ? x : s*x with s drawn per element "
        "uniformly on [lower_bound, upper_bound) in training and the mean of the bounds in "
        "inference, outputs (output, mask: the slopes).  "
        "Backward: _backward_LeakyReLU."))

register(OpDef(
    "_backward_LeakyReLU", arguments=("out_grad", "mask", "out_data", "data", "gamma"),
    list_input_names=_leaky_bwd_names,
    outputs=lambda p: ["data_grad", "gamma_grad"] if p["act_type"] == "prelu"
    else ["data_grad"],
    params=_LEAKY_PARAMS, infer_shape=_leaky_bwd_shape,
    infer_type=same_float_types("_backward_LeakyReLU", _leaky_bwd_names,
                                nout=lambda p: 2 if p["act_type"] == "prelu" else 1),
    compute=computes(_KERNELS["leaky_backward"],
                     gpu_compute(_ACT_GPU, "leaky_backward", _leaky_pack)),
    pack_params=_leaky_pack,
    differentiable=False,
    doc="Gradient of LeakyReLU: (out_grad, out_data) -> data_grad (gelu: (out_grad, "
        "data)); selu's below 0 is MXNet's lambda*(alpha + out_data); for rrelu "
        "(out_grad, mask, out_data) -> data_grad = out_grad * (out_data > 0 ? 1 : mask); "
        "for prelu (out_grad, data, gamma) -> (data_grad, gamma_grad)."))


# --- softmax / log_softmax ----------------------------------------------------
_SOFTMAX_PARAMS = {
    "axis": Param("int", -1, doc="The axis along which to compute softmax."),
    "temperature": Param("float", None, doc="Temperature parameter in softmax (None: 1)."),
}


def _softmax_pack(op, log, negate=False):
    """SoftmaxParam; softmin (``negate``) is softmax with the temperature
    negated, softmax(-x / T), for which the kernels shift by the minimum."""
    def pack(params, shapes):
        shape = tuple(shapes[0])
        axis = params["axis"]
        if not -len(shape) <= axis < len(shape):
            raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for "
                             f"'{'data' if not op.startswith('_') else 'out_grad'}' of shape "
                             f"{shape}")
        axis %= len(shape)
        temp = 1.0 if params["temperature"] is None else params["temperature"]
        temp = -temp if negate else temp
        return struct.pack("=qqqdii", math.prod(shape[:axis]), shape[axis],
                           math.prod(shape[axis + 1:]), temp, log, 0)    # SoftmaxParam
    return pack


def _softmax_shape(op, names):
    same = _same_shape(op, names)

    def infer(params, shapes):
        out = same(params, shapes)
        _softmax_pack(op, False)(params, shapes)        # checks the axis
        t = params["temperature"]
        if t is not None and t == 0:
            raise ShapeError(f"{op}: argument 'temperature' must be non-zero, got {t}")
        return out
    return infer


for _name, _log, _neg, _what in (("softmax", False, False, "exp(x/T) / sum(exp(x/T))"),
                                 ("log_softmax", True, False, "log(softmax(x))"),
                                 ("softmin", False, True, "softmax(-x)")):
    register(OpDef(
        _name, arguments=("data",), params=_SOFTMAX_PARAMS,
        infer_shape=_softmax_shape(_name, lambda p: ["data"]),
        infer_type=same_float_types(_name, lambda p: ["data"]),
        compute=computes(_KERNELS["softmax"], gpu_compute(_SOFTMAX_GPU, "softmax",
                                                          _softmax_pack(_name, _log, _neg))),
        pack_params=_softmax_pack(_name, _log, _neg),
        inplace=((0, 0),),
        doc=f"Applies {_what} along an axis, stable for large inputs (the row's maximum is "
            f"subtracted first).  Backward: _backward_{_name}(out_grad, out_data)."))
    register(OpDef(
        f"_backward_{_name}", arguments=("out_grad", "out_data"), outputs=("data_grad",),
        params=_SOFTMAX_PARAMS,
        infer_shape=_softmax_shape(f"_backward_{_name}", lambda p: ["out_grad", "out_data"]),
        infer_type=same_float_types(f"_backward_{_name}", lambda p: ["out_grad", "out_data"]),
        compute=computes(_KERNELS["softmax_backward"],
                         gpu_compute(_SOFTMAX_GPU, "softmax_backward",
                                     _softmax_pack(f"_backward_{_name}", _log, _neg))),
        pack_params=_softmax_pack(f"_backward_{_name}", _log, _neg), inplace=((0, 0),),
        differentiable=False,
        doc=f"Gradient of {_name} from (out_grad, out_data), with the forward's axis and "
            f"temperature: data_grad."))
