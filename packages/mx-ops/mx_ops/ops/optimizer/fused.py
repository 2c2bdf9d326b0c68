"""The single-weight fused updates that MXNet 1.9.1's optimizers call beyond
sgd/adam/rmsprop/ftrl: nag_mom_update, signsgd_update, signum_update,
ftml_update, rmspropalex_update, lamb_update_phase1/2, and the
multi-precision mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update,
mp_lamb_update_phase1/2, with MXNet's names, parameters (order, defaults),
inputs and formulas (fused_cpu.h states them).

The states are written in place (``mutate_inputs``); the output is the new
weight and may be the weight itself (``out=weight``), except
lamb_update_phase1's, which is the step LAMB's phase 2 scales.  The mp_
variants keep a float32 master copy ``weight32`` (their last input, and
float32 momenta and moments) for float16 weights: they compute in float on
it, update it (but mp_lamb_update_phase2, which MXNet 1.9.1 has read it
only) and write the weight's dtype.  None is differentiable."""
import struct

import numpy as np

from mx_ops.core._nn_common import FLOATS
from mx_ops.core._params import Param
from mx_ops.core.partial_infer import (same_shape, same_type, set_infer_shape_partial,
                                       set_infer_type_partial)
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.optimizer import _fused_cpu
from mx_ops.ops.optimizer.optimizer import _COMMON

_GPU = "mx_ops.ops.optimizer._fused_gpu"
_KERNELS = _fused_cpu.kernels()
F32 = "float32"


def _p(kind, default, doc):
    return Param(kind, default, doc=doc)


_MOMENTUM = {"momentum": _p("float", 0.0, "The decay rate of momentum estimates at each "
                                          "epoch.")}
_LAZY = {"lazy_update": _p("bool", True, "If true, lazy updates are applied if gradient's "
                                         "stype is row_sparse.")}
_CLIP_WEIGHTS = {"clip_weights": _p("float", -1.0, "Clip weights to the range of "
                                                   "[-clip_weights, clip_weights]; a "
                                                   "negative value turns clipping off.")}
_LAMB1 = {
    "beta1": _p("float", 0.9, "The decay rate for the 1st moment estimates."),
    "beta2": _p("float", 0.999, "The decay rate for the 2nd moment estimates."),
    "epsilon": _p("float", 1e-6, "A small constant for numerical stability."),
    "t": Param("int", doc="Index update count."),
    "bias_correction": _p("bool", True, "Whether to use bias correction."),
    "wd": Param("float", doc=_COMMON["wd"].doc),
    "rescale_grad": _COMMON["rescale_grad"], "clip_gradient": _COMMON["clip_gradient"]}
_LAMB2 = {
    "lr": _COMMON["lr"],
    "lower_bound": _p("float", -1.0, "Lower limit of norm of weight; a negative value sets "
                                     "none."),
    "upper_bound": _p("float", -1.0, "Upper limit of norm of weight; a negative value sets "
                                     "none.")}


def _sgd_like(own=None, trailing=None):
    """MXNet's field order: lr, the op's own rates, wd, rescale_grad,
    clip_gradient, the op's trailing options."""
    return {"lr": _COMMON["lr"], **(own or {}), "wd": _COMMON["wd"],
            "rescale_grad": _COMMON["rescale_grad"],
            "clip_gradient": _COMMON["clip_gradient"], **(trailing or {})}


_INPUTS = {
    "weight": "Weight; the output is its update (out=weight updates it in place).",
    "grad": "Gradient.",
    "mom": "Momentum, updated in place.",
    "weight32": "The float32 master copy of weight, updated in place.",
    "d": "FTML's internal state d_t, updated in place.",
    "v": "FTML's internal state v_t, updated in place.",
    "z": "FTML's internal state z_t, updated in place.",
    "n": "The moving average of squared gradients, updated in place.",
    "g": "The moving average of gradients, updated in place.",
    "delta": "The update step, updated in place.",
    "mean": "Moving mean, updated in place.",
    "var": "Moving variance, updated in place.",
    "r1": "r1: the norm of the weight, shape (1,).",
    "r2": "r2: the norm of g, shape (1,).",
}
_LAMB_G = "The output of lamb_update_phase1 (the step before LAMB's trust ratio)."


class Spec:
    """One operator: ``inputs``; ``params`` in MXNet's order; ``slots``:
    the parameters packed into FusedParam's a, b, c, d, then t and flag;
    ``fp32``: the inputs that are float32 whatever the weight (mp_);
    ``mutate``; ``inplace``; ``doc``."""

    def __init__(self, inputs, params, slots=(), t=None, flag=None, fp32=(), mutate=(),
                 inplace=((0, 0),), weight_dtypes=FLOATS, out_fp32=False, doc=""):
        self.inputs, self.params, self.slots = tuple(inputs), params, tuple(slots)
        self.t, self.flag, self.fp32, self.mutate = t, flag, tuple(fp32), tuple(mutate)
        self.inplace, self.weight_dtypes, self.out_fp32 = inplace, weight_dtypes, out_fp32
        self.doc = doc


_MP_DOC = (" Mixed precision: computes in float on the float32 master copy weight32 "
           "(updated in place) and writes the new weight in weight's dtype.")
SPECS = {
    "nag_mom_update": Spec(
        ("weight", "grad", "mom"), _sgd_like(_MOMENTUM), ("momentum",), mutate=(2,),
        doc="Update function for Nesterov Accelerated Gradient (NAG): s = lr*(clip("
            "rescale_grad*grad) + wd*weight); mom = momentum*mom - s; weight = weight + "
            "momentum*mom - s."),
    "mp_nag_mom_update": Spec(
        ("weight", "grad", "mom", "weight32"), _sgd_like(_MOMENTUM), ("momentum",),
        fp32=(2, 3), mutate=(2, 3),
        doc="Update function for multi-precision Nesterov Accelerated Gradient (NAG): "
            "nag_mom_update on weight32 with a float32 mom." + _MP_DOC),
    "mp_sgd_update": Spec(
        ("weight", "grad", "weight32"), _sgd_like(trailing=_LAZY), fp32=(2,), mutate=(2,),
        doc="Updater function for multi-precision sgd optimizer: weight32 = (1 - lr*wd)*"
            "weight32 - lr*clip(rescale_grad*grad)." + _MP_DOC),
    "mp_sgd_mom_update": Spec(
        ("weight", "grad", "mom", "weight32"), _sgd_like(_MOMENTUM, _LAZY), ("momentum",),
        fp32=(2, 3), mutate=(2, 3),
        doc="Updater function for multi-precision sgd optimizer with momentum: mom = "
            "momentum*mom - lr*wd*weight32 - lr*clip(rescale_grad*grad); weight32 += mom."
            + _MP_DOC),
    "signsgd_update": Spec(
        ("weight", "grad"), _sgd_like(),
        doc="Update function for SignSGD optimizer: weight = (1 - lr*wd)*weight - "
            "lr*sign(grad).  As in MXNet, rescale_grad and clip_gradient do not enter."),
    "signum_update": Spec(
        ("weight", "grad", "mom"),
        _sgd_like(_MOMENTUM, {"wd_lh": _p("float", 0.0, "The amount of weight decay that "
                                                        "does not go into gradient/momentum "
                                                        "calculations.")}),
        ("momentum", "wd_lh"), mutate=(2,),
        doc="SIGN momentUM (Signum) optimizer: mom = momentum*mom - (1-momentum)*(wd*weight "
            "+ clip(rescale_grad*grad)); weight = (1 - lr*wd_lh)*weight + lr*sign(mom)."),
    "ftml_update": Spec(
        ("weight", "grad", "d", "v", "z"),
        {"lr": Param("float", doc="Learning rate."),
         "beta1": _p("float", 0.6, "Generally close to 0.5."),
         "beta2": _p("float", 0.999, "Generally close to 1."),
         "epsilon": _p("float", 1e-8, "Epsilon to prevent div 0 (a double, as MXNet's)."),
         "t": Param("int", doc="Number of update."),
         "wd": _COMMON["wd"], "rescale_grad": _COMMON["rescale_grad"],
         "clip_grad": Param("float", -1.0, doc=_COMMON["clip_gradient"].doc)},
        ("beta1", "beta2", "epsilon"), t="t", mutate=(2, 3, 4),
        doc="The FTML optimizer (Follow the Moving Leader): g = clip(rescale_grad*grad + "
            "wd*weight); v = beta2*v + (1-beta2)*g^2; d_t = (1-beta1^t)/lr*(sqrt(v/(1-"
            "beta2^t)) + epsilon); z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight; "
            "d = d_t; weight = -z/d_t."),
    "rmspropalex_update": Spec(
        ("weight", "grad", "n", "g", "delta"),
        _sgd_like({"gamma1": _p("float", 0.95, "Decay rate."),
                   "gamma2": _p("float", 0.9, "Decay rate."),
                   "epsilon": _p("float", 1e-8, "A small constant for numerical "
                                                "stability.")}, _CLIP_WEIGHTS),
        ("gamma1", "gamma2", "epsilon", "clip_weights"), mutate=(2, 3, 4),
        doc="Update function for RMSPropAlex optimizer (Graves): g' = clip(rescale_grad*"
            "grad + wd*weight); n = (1-gamma1)*g'^2 + gamma1*n; g = (1-gamma1)*g' + "
            "gamma1*g; delta = gamma2*delta - lr*g'/sqrt(n - g^2 + epsilon); weight = "
            "weight + delta, clipped to clip_weights."),
    "lamb_update_phase1": Spec(
        ("weight", "grad", "mean", "var"), _LAMB1, ("beta1", "beta2", "epsilon"), t="t",
        flag="bias_correction", mutate=(2, 3), inplace=(),
        doc="Phase I of lamb update: mean = beta1*mean + (1-beta1)*g; var = beta2*var + "
            "(1-beta2)*g^2 with g = clip(rescale_grad*grad); out = mean^/(sqrt(var^) + "
            "epsilon) + wd*weight, where ^ divides by 1 - beta^t when bias_correction."),
    "mp_lamb_update_phase1": Spec(
        ("weight", "grad", "mean", "var", "weight32"), _LAMB1, ("beta1", "beta2", "epsilon"),
        t="t", flag="bias_correction", fp32=(2, 3, 4), mutate=(2, 3), inplace=(),
        weight_dtypes=("float16",), out_fp32=True,
        doc="Mixed Precision version of Phase I of lamb update: float16 weight and grad, "
            "float32 mean, var and weight32 (read for the weight decay); the output is "
            "float32."),
    "lamb_update_phase2": Spec(
        ("weight", "g", "r1", "r2"), _LAMB2, ("lower_bound", "upper_bound"),
        doc="Phase II of lamb update: r1 clipped to [lower_bound, upper_bound] (where each "
            "is >= 0); weight = weight - lr*(r1/r2)*g, or weight - lr*g when r1 or r2 is 0."),
    "mp_lamb_update_phase2": Spec(
        ("weight", "g", "r1", "r2", "weight32"), _LAMB2, ("lower_bound", "upper_bound"),
        fp32=(1, 2, 3, 4),
        doc="Mixed Precision version of Phase II of lamb update: weight = weight32 - "
            "lr*(r1/r2)*g in float with float32 g, r1 and r2, written in weight's dtype.  "
            "As in MXNet 1.9.1, weight32 is read and left as it is."),
}
_LAMB2_NAMES = ("lamb_update_phase2", "mp_lamb_update_phase2")


def values(name, params):
    """The FusedParam numbers of ``name``: lr, wd, rescale_grad,
    clip_gradient, a, b, c, d (float32-rounded, as MXNet's float fields;
    ftml's epsilon is a double), t, flag."""
    spec = SPECS[name]
    f32 = [float(np.float32(params.get(k, d))) for k, d in
           (("lr", 0.0), ("wd", 0.0), ("rescale_grad", 1.0))]
    clip = params.get("clip_grad" if name == "ftml_update" else "clip_gradient", -1.0)
    own = [params[s] if (name, s) == ("ftml_update", "epsilon") else float(np.float32(params[s]))
           for s in spec.slots]
    return (f32 + [float(np.float32(clip))] + own + [0.0] * (4 - len(own))
            + [int(params[spec.t]) if spec.t else 0, int(bool(params[spec.flag])) if spec.flag
               else 0])


def _pack(name):
    def pack(params, shapes):
        return struct.pack("=8dii", *values(name, params))
    return pack


def _shapes(name):
    """Every input of the weight's shape; lamb phase 2's r1, r2 (1,)."""
    spec = SPECS[name]

    def infer(params, shapes):
        want = tuple(shapes[0])
        for i, (arg, s) in enumerate(zip(spec.inputs[1:], shapes[1:]), 1):
            expect = (1,) if (name in _LAMB2_NAMES and i in (2, 3)) else want
            if tuple(s) != expect:
                what = "the norm's (1,)" if expect == (1,) else f"'weight' {want}"
                raise ShapeError(f"{name}: argument '{arg}' has shape {tuple(s)}, which "
                                 f"differs from {what}")
        return [want]
    return infer


def _types(name):
    """The weight's dtype (one of ``weight_dtypes``) for the inputs not in
    ``fp32``; float32 for those (MXNet's MP_InferType)."""
    spec = SPECS[name]

    def infer(params, dtypes):
        w = dtypes[0]
        if w not in spec.weight_dtypes:
            raise TypeInferenceError(f"{name}: argument 'weight' has dtype {w}; supported: "
                                     f"{', '.join(spec.weight_dtypes)}")
        for i, (arg, d) in enumerate(zip(spec.inputs[1:], dtypes[1:]), 1):
            want = F32 if i in spec.fp32 else w
            if d != want:
                why = ("a float32 master input" if i in spec.fp32 else f"'weight' is {w}")
                raise TypeInferenceError(f"{name}: argument '{arg}' has dtype {d}; expected "
                                         f"{want} ({why})")
        return [F32 if spec.out_fp32 else w]
    return infer


def _partial_types(name):
    """MXNet's partial rule: the weight-typed inputs and the output share one
    dtype, the float32 ones are float32."""
    spec = SPECS[name]
    plain = [i for i in range(len(spec.inputs)) if i not in spec.fp32]
    shared = same_type(plain, [] if spec.out_fp32 else [0])

    def rule(params, ins, outs):
        for i in spec.fp32:
            ins.assign(i, F32, why="a float32 master input")
        if spec.out_fp32:
            outs.assign(0, F32, why="the output is float32")
        if spec.weight_dtypes == ("float16",):
            ins.assign(0, "float16", why="mixed precision takes float16 weights")
        return shared(params, ins, outs)
    return rule


def _partial_shapes(name):
    if name not in _LAMB2_NAMES:
        return same_shape()
    n = len(SPECS[name].inputs)
    shared = same_shape([i for i in range(n) if i not in (2, 3)], [0])

    def rule(params, ins, outs):
        ins.assign(2, (1,), why="a norm")
        ins.assign(3, (1,), why="a norm")
        return shared(params, ins, outs)
    return rule


for _name, _spec in SPECS.items():
    _docs = {k: _INPUTS[k] for k in _spec.inputs}
    if _name in _LAMB2_NAMES:
        _docs["g"] = _LAMB_G
    register(OpDef(
        _name, arguments=_spec.inputs, params=_spec.params, input_docs=_docs,
        infer_shape=_shapes(_name), infer_type=_types(_name),
        compute=computes(_KERNELS[_name], gpu_compute(_GPU, "compute", _name)),
        pack_params=_pack(_name), inplace=_spec.inplace, mutate_inputs=_spec.mutate,
        differentiable=False, doc=_spec.doc))
    set_infer_shape_partial(_name, _partial_shapes(_name))
    set_infer_type_partial(_name, _partial_types(_name))
