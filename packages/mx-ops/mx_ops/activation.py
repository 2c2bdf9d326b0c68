"""Activation, LeakyReLU, softmax and log_softmax, and their backward
operators, with MXNet 1.x's names and parameters.

Backward conventions (inputs; outputs), each output honouring its req:
- ``_backward_Activation(out_grad, out_data; data_grad)``: every act_type's
  derivative is computed from the output, so the forward may run in place.
- ``_backward_LeakyReLU``: (out_grad, out_data; data_grad) for leaky, elu,
  selu and rrelu; (out_grad, data, gamma; data_grad, gamma_grad) for prelu,
  whose gradient needs the input and the slopes.
- ``_backward_softmax`` / ``_backward_log_softmax(out_grad, out_data;
  data_grad)`` with the forward's axis and temperature.

rrelu computes with the mean slope (lower_bound + upper_bound) / 2, which is
MXNet's inference behaviour; the random per-element slope of training is not
implemented (the kernel sees no is_train flag yet)."""
import math
import struct

from mx_ops import _nn_cpu
from mx_ops._nn_common import same_float_types
from mx_ops._params import Param
from mx_ops.registry import OpDef, ShapeError, computes, gpu_compute, register

_KERNELS = _nn_cpu.kernels()

# Codes of src/activation_cpu.h.
ACT_TYPES = {"relu": 0, "sigmoid": 1, "tanh": 2, "softrelu": 3, "softsign": 4}
LEAKY_TYPES = {"leaky": 5, "elu": 6, "selu": 7, "rrelu": 5, "prelu": -1}


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
    compute=computes(_KERNELS["activation"], gpu_compute("_act_gpu", "activation", _act_pack)),
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
                     gpu_compute("_act_gpu", "activation_backward", _act_pack)),
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


def _leaky_bwd_names(params):
    if params["act_type"] == "prelu":
        return ["out_grad", "data", "gamma"]
    return ["out_grad", "out_data"]


def _check_gamma(op, data, gamma):
    data, gamma = tuple(data), tuple(gamma)
    chans = data[1] if len(data) >= 2 else 1
    if gamma not in ((1,), (chans,)):
        raise ShapeError(f"{op}: argument 'gamma' has shape {gamma}; for 'data' {data} it "
                         f"must be ({chans},) (one slope per channel, axis 1) or (1,)")


def _leaky_shape(params, shapes):
    if params["act_type"] == "prelu":
        _check_gamma("LeakyReLU", shapes[0], shapes[1])
    return [tuple(shapes[0])]


def _leaky_pack(params, shapes):
    act = params["act_type"]
    slope = params["slope"]
    if act == "rrelu":
        slope = (params["lower_bound"] + params["upper_bound"]) / 2
    return struct.pack("=iid", LEAKY_TYPES[act], 0, slope)


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
    params=_LEAKY_PARAMS, infer_shape=_leaky_shape,
    infer_type=same_float_types("LeakyReLU", _leaky_names),
    compute=computes(_KERNELS["leaky"], gpu_compute("_act_gpu", "leaky", _leaky_pack)),
    pack_params=_leaky_pack,
    doc="Leaky rectified linear units: leaky x>0 ? x : slope*x; elu x>0 ? x : "
        "slope*(exp(x)-1); selu lambda*(x>0 ? x : alpha*(exp(x)-1)); prelu with a learned "
        "slope per channel (input gamma); rrelu with the mean of lower_bound and upper_bound "
        "as its slope (MXNet's inference behaviour; no random slopes in training).  "
        "Backward: _backward_LeakyReLU."))

register(OpDef(
    "_backward_LeakyReLU", arguments=("out_grad", "out_data", "data", "gamma"),
    list_input_names=_leaky_bwd_names,
    outputs=lambda p: ["data_grad", "gamma_grad"] if p["act_type"] == "prelu"
    else ["data_grad"],
    params=_LEAKY_PARAMS, infer_shape=_leaky_bwd_shape,
    infer_type=same_float_types("_backward_LeakyReLU", _leaky_bwd_names,
                                nout=lambda p: 2 if p["act_type"] == "prelu" else 1),
    compute=computes(_KERNELS["leaky_backward"],
                     gpu_compute("_act_gpu", "leaky_backward", _leaky_pack)),
    pack_params=_leaky_pack,
    differentiable=False,
    doc="Gradient of LeakyReLU: (out_grad, out_data) -> data_grad, or for prelu "
        "(out_grad, data, gamma) -> (data_grad, gamma_grad)."))


# --- softmax / log_softmax ----------------------------------------------------
_SOFTMAX_PARAMS = {
    "axis": Param("int", -1, doc="The axis along which to compute softmax."),
    "temperature": Param("float", None, doc="Temperature parameter in softmax (None: 1)."),
}


def _softmax_pack(op, log):
    def pack(params, shapes):
        shape = tuple(shapes[0])
        axis = params["axis"]
        if not -len(shape) <= axis < len(shape):
            raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for "
                             f"'{'data' if not op.startswith('_') else 'out_grad'}' of shape "
                             f"{shape}")
        axis %= len(shape)
        temp = 1.0 if params["temperature"] is None else params["temperature"]
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


for _name, _log, _what in (("softmax", False, "exp(x/T) / sum(exp(x/T))"),
                           ("log_softmax", True, "log(softmax(x))")):
    register(OpDef(
        _name, arguments=("data",), params=_SOFTMAX_PARAMS,
        infer_shape=_softmax_shape(_name, lambda p: ["data"]),
        infer_type=same_float_types(_name, lambda p: ["data"]),
        compute=computes(_KERNELS["softmax"], gpu_compute("_softmax_gpu", "softmax",
                                                          _softmax_pack(_name, _log))),
        pack_params=_softmax_pack(_name, _log),
        inplace=((0, 0),),
        doc=f"Applies {_what} along an axis, stable for large inputs (the row's maximum is "
            f"subtracted first).  Backward: _backward_{_name}(out_grad, out_data)."))
    register(OpDef(
        f"_backward_{_name}", arguments=("out_grad", "out_data"), outputs=("data_grad",),
        params=_SOFTMAX_PARAMS,
        infer_shape=_softmax_shape(f"_backward_{_name}", lambda p: ["out_grad", "out_data"]),
        infer_type=same_float_types(f"_backward_{_name}", lambda p: ["out_grad", "out_data"]),
        compute=computes(_KERNELS["softmax_backward"],
                         gpu_compute("_softmax_gpu", "softmax_backward",
                                     _softmax_pack(f"_backward_{_name}", _log))),
        pack_params=_softmax_pack(f"_backward_{_name}", _log), inplace=((0, 0),),
        differentiable=False,
        doc=f"Gradient of {_name} from (out_grad, out_data), with the forward's axis and "
            f"temperature: data_grad."))
