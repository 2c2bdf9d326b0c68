"""MXNet 1.9.1's aggregated AdamW and LAMB updates: _multi_adamw_update,
_multi_mp_adamw_update (mx.nd.contrib.multi_adamw_update's operators) and
_multi_lamb_update, _multi_mp_lamb_update (contrib.multi_lamb_update's);
multi_adam_cpu.h states the formulas.

Inputs, one weight after the other: (weight, grad, mean, var[, weight32]),
then for AdamW the rescale_grad array (one element: NaN, Inf or 0 skip the
update).  Outputs: the new weights (``out=weights`` updates them in place);
mean, var and weight32 are written in place.  As in MXNet, the mp_ forms
ignore weight32 when the weights are float32.  Not differentiable."""
import struct

import numpy as np

from mx_ops.core._limits import MAX_COUNT
from mx_ops.core._params import Param, ParamError
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.optimizer._fused_cpu import kernels
from mx_ops.ops.optimizer.multi import check_group_types, group_shape_rule, group_type_rule
from mx_ops.ops.optimizer.optimizer import _COMMON
from mx_storage.resource import ResourceRequest

_GPU = "mx_ops.ops.optimizer._fused_gpu"
_KERNELS = kernels()


def _f(default, doc):
    return Param("float", default, doc=doc)


_BETAS = {"beta1": _f(0.9, "The decay rate for the 1st moment estimates."),
          "beta2": _f(0.999, "The decay rate for the 2nd moment estimates.")}
_ADAMW_PARAMS = {
    "lrs": Param("float_tuple", doc="Learning rates"), **_BETAS,
    "epsilon": _f(1e-8, "A small constant for numerical stability."),
    "wds": Param("float_tuple", doc="Weight decays."),
    "etas": Param("float_tuple", doc="Learning rates schedule multiplier"),
    "clip_gradient": _COMMON["clip_gradient"],
    "num_weights": Param("int", 1, low=1, high=MAX_COUNT, doc="Number of updated weights.")}
_LAMB_PARAMS = {
    "learning_rates": Param("float_tuple", doc="List of learning rates"), **_BETAS,
    "epsilon": _f(1e-6, "Small value to avoid division by 0."),
    "wds": Param("float_tuple", doc="List of Weight decays."),
    "rescale_grad": _f(1.0, "Gradient rescaling factor"),
    "lower_bound": _f(-1.0, "Lower limit of norm of weight; a negative value sets none."),
    "upper_bound": _f(-1.0, "Upper limit of norm of weight; a negative value sets none."),
    "clip_gradient": _COMMON["clip_gradient"],
    "bias_correction": Param("bool", True, doc="Whether to use bias correction."),
    "step_count": Param("shape", doc="Step count for each tensor"),
    "num_tensors": Param("int", 1, low=1, high=MAX_COUNT, doc="Number of tensors")}


class AdamSpec:
    """One operator: AdamW or LAMB, mixed precision or not."""

    def __init__(self, lamb, mp):
        self.lamb, self.mp = lamb, mp
        self.per_weight = ("weight", "grad", "mean", "var") + (("weight32",) if mp else ())
        self.count = "num_tensors" if lamb else "num_weights"
        self.rates = ("learning_rates", "wds", "step_count") if lamb else ("lrs", "wds", "etas")

    def input_names(self, params):
        names = [f"{r}_{k}" for k in range(params[self.count]) for r in self.per_weight]
        return names + ([] if self.lamb else ["rescale_grad"])

    def mutated(self, params):
        per = len(self.per_weight)
        return tuple(k * per + j for k in range(params[self.count]) for j in range(2, per))

    def fp32(self, j):
        """Whether input j of a weight is float32 whatever the weight."""
        return self.mp and j >= 2


SPECS = {"_multi_adamw_update": AdamSpec(False, False),
         "_multi_mp_adamw_update": AdamSpec(False, True),
         "_multi_lamb_update": AdamSpec(True, False),
         "_multi_mp_lamb_update": AdamSpec(True, True)}


def pack(name, params):
    """MultiAdamParam, then the rates (float32 values; step counts as they are)."""
    spec = SPECS[name]
    n = params[spec.count]
    f32 = [float(np.float32(params.get(k, d))) for k, d in (
        ("beta1", 0.9), ("beta2", 0.999), ("epsilon", 0.0), ("clip_gradient", -1.0),
        ("rescale_grad", 1.0), ("lower_bound", -1.0), ("upper_bound", -1.0))]
    head = struct.pack("=7d4i", *f32, n, len(spec.per_weight), int(spec.mp),
                       int(params.get("bias_correction", True)))
    rates = [float(np.float32(v)) for key in spec.rates[:2] for v in params[key]]
    rates += [float(v) if spec.lamb else float(np.float32(v)) for v in params[spec.rates[2]]]
    return head + struct.pack(f"={3 * n}d", *rates)


def _check(name, params, inputs):
    spec = SPECS[name]
    n, per = params[spec.count], len(spec.per_weight)
    want = n * per + (0 if spec.lamb else 1)
    if len(inputs) != want:
        raise ShapeError(f"{name}: {spec.count}={n} needs {want} inputs "
                         f"({', '.join(spec.per_weight)} per weight"
                         f"{'' if spec.lamb else ', then rescale_grad'}); got {len(inputs)}")
    for key in spec.rates:
        if len(params[key]) != n:
            raise ParamError(f"{name}: argument '{key}' has {len(params[key])} value(s); "
                             f"{spec.count} is {n}")
    return spec, n, per


def _shapes(name):
    def infer(params, shapes):
        spec, n, per = _check(name, params, shapes)
        names = spec.input_names(params)
        for i, s in enumerate(shapes[:n * per]):
            w = tuple(shapes[i - i % per])
            if tuple(s) != w:
                raise ShapeError(f"{name}: argument '{names[i]}' has shape {tuple(s)}, which "
                                 f"differs from '{names[i - i % per]}' {w}")
        if not spec.lamb and 0 in tuple(shapes[-1]):
            raise ShapeError(f"{name}: argument 'rescale_grad' has shape {tuple(shapes[-1])}; "
                             f"it needs an element")
        return [tuple(shapes[k * per]) for k in range(n)]
    return infer


def _fp32(spec):
    """Whether input i of n weights is float32: the mp_ states, and the mp_
    form's rescale_grad (the plain one's has the weights' dtype)."""
    per = len(spec.per_weight)
    return lambda i, n: spec.fp32(i % per) if i < n * per else spec.mp


def _types(name):
    spec = SPECS[name]

    def infer(params, dtypes):
        _, n, _ = _check(name, params, dtypes)
        return check_group_types(name, spec.input_names(params), dtypes, n,
                                 lambda i: _fp32(spec)(i, n))
    return infer


def _steps_bytes(per):
    """The workspace of a LAMB call: its steps, 8 bytes per weight element (a
    double for float64 weights); the context's pooled temporary space."""
    return lambda params, shapes: 8 * sum(int(np.prod(s)) for s in shapes[::per])


_DOCS = {
    False: "Update function for AdamW optimizer on num_weights weights in one call: mean = "
           "beta1*mean + (1-beta1)*g; var = beta2*var + (1-beta2)*g^2 with g = clip("
           "rescale_grad*grad); weight -= eta*(lr*mean/(sqrt(var) + epsilon) + wd*weight).  "
           "If rescale_grad (the last input) is NaN, Inf, or 0, the update is skipped.",
    True: "Compute the LAMB updates of multiple weights and grads: lamb_update_phase1 at each "
          "tensor's step_count into a step g, then weight -= lr*(r1/r2)*g with r1 = |weight| "
          "(clipped to lower_bound, upper_bound), r2 = |g|."}

for _name, _spec in SPECS.items():
    _temp = dict(resources=(ResourceRequest.TEMP_SPACE,),
                 workspace=_steps_bytes(len(_spec.per_weight))) if _spec.lamb else {}
    register(OpDef(
        _name, arguments=("data",), var_inputs=True, list_input_names=_spec.input_names,
        outputs=lambda p, _c=_spec.count: ["output"] if p[_c] == 1 else
        [f"output{k}" for k in range(p[_c])],
        params=_LAMB_PARAMS if _spec.lamb else _ADAMW_PARAMS, input_docs={"data": "data"},
        infer_shape=_shapes(_name), infer_type=_types(_name),
        compute=computes(_KERNELS["multi_lamb" if _spec.lamb else "multi_adamw"],
                         gpu_compute(_GPU, "multi_adam_compute", _name)),
        pack_params=lambda p, s, _n=_name: pack(_n, p), mutate_inputs=_spec.mutated,
        differentiable=False, **_temp,
        doc=_DOCS[_spec.lamb] + (" Mixed precision: in float on weight32 (float32 mean, var) "
                                 "unless the weights are float32." if _spec.mp else "")))
    set_infer_shape_partial(_name, group_shape_rule(len(_spec.per_weight), _spec.count))
    set_infer_type_partial(_name, group_type_rule(len(_spec.per_weight), _spec.count,
                                                  _fp32(_spec)))
