"""The aggregated updates of MXNet 1.9.1 (multi_sgd_update,
multi_sgd_mom_update, multi_mp_sgd_update, multi_mp_sgd_mom_update and
their preloaded_multi_* forms, which read the learning rates and weight
decays from two float32 arrays instead of the lrs/wds tuples), and
multi_sum_sq and multi_lars, which LARS uses (multi_cpu.h states the
formulas).

A multi_* update takes its ``num_weights`` weights' inputs one weight after
the other, (weight, grad[, mom][, weight32]) each, then lrs and wds when
preloaded, and returns the ``num_weights`` new weights (``out=weights``
updates them in place).  One kernel call updates all of them.  As in
MXNet, multi_sgd_update's step is w - lr*(wd*w + g), a rounding apart from
sgd_update's (1 - lr*wd)*w - lr*g.  None is differentiable."""
import struct

import numpy as np

from mx_ops.core._limits import MAX_COUNT
from mx_ops.core._nn_common import FLOATS
from mx_ops.core._params import Param, ParamError
from mx_ops.core.partial_infer import (fixed_type, same_shape, set_infer_shape_partial,
                                       set_infer_type_partial)
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.optimizer._fused_cpu import kernels
from mx_ops.ops.optimizer.optimizer import _COMMON

_GPU = "mx_ops.ops.optimizer._fused_gpu"
_KERNELS = kernels()
F32 = "float32"

_NUM_WEIGHTS = Param("int", 1, low=1, high=MAX_COUNT, doc="Number of updated weights.")
_RATES = {
    "lrs": Param("float_tuple", doc="Learning rates."),
    "wds": Param("float_tuple", doc="Weight decay augments the objective function with a "
                                    "regularization term that penalizes large weights."),
}
_MOMENTUM = {"momentum": Param("float", 0.0, doc="The decay rate of momentum estimates at "
                                                 "each epoch.")}
_TAIL = {"rescale_grad": _COMMON["rescale_grad"], "clip_gradient": _COMMON["clip_gradient"],
         "num_weights": _NUM_WEIGHTS}


class MultiSpec:
    """One aggregated update: the inputs of each weight, whether lrs and wds
    are arrays (preloaded) and its documentation."""

    def __init__(self, per_weight, preloaded, doc):
        self.per_weight, self.preloaded, self.doc = tuple(per_weight), preloaded, doc
        self.mom = "mom" in per_weight
        self.mp = "weight32" in per_weight

    def params(self):
        return {**({} if self.preloaded else _RATES), **(_MOMENTUM if self.mom else {}),
                **_TAIL}

    def input_names(self, params):
        n = params["num_weights"]
        names = [f"{r}_{k}" for k in range(n) for r in self.per_weight]
        return names + (["lrs", "wds"] if self.preloaded else [])

    def mutated(self, params):
        """The momenta and master weights (MXNet's FMutateInputs)."""
        per = len(self.per_weight)
        return tuple(k * per + j for k in range(params["num_weights"])
                     for j, r in enumerate(self.per_weight) if r in ("mom", "weight32"))

    def fp32(self, j):
        """Whether input j of a weight is float32 whatever the weight."""
        return self.mp and self.per_weight[j] in ("mom", "weight32")


_STEP = {False: "weight = weight - lr*(wd*weight + clip(rescale_grad*grad))",
         True: "mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); weight = "
               "weight + mom"}
MULTI = {}
for _mom in (False, True):
    for _mp in (False, True):
        _per = ("weight", "grad") + (("mom",) if _mom else ()) + (("weight32",) if _mp else ())
        _base = "multi_" + ("mp_" if _mp else "") + "sgd_" + ("mom_" if _mom else "") + "update"
        _what = (f"Update function for {'multi-precision ' if _mp else ''}Stochastic Gradient "
                 f"Descent (SGD){' with momentum' if _mom else ''} on num_weights weights in "
                 f"one call, each taking ({', '.join(_per)}): {_STEP[_mom]}"
                 + (", in float on the float32 weight32 (updated in place with mom)"
                    if _mp else "") + ".")
        MULTI[_base] = MultiSpec(_per, False, _what + "  lrs and wds give each weight's rates.")
        MULTI["preloaded_" + _base] = MultiSpec(
            _per, True, _what + "  The last two inputs, lrs and wds (float32, (num_weights,)), "
                                "give each weight's rates.")


def pack_multi(name, params):
    """The MultiParam block, then the rates (as float32 values) unless
    preloaded."""
    spec = MULTI[name]
    n = params["num_weights"]
    head = struct.pack("=3d6i", float(np.float32(params.get("momentum", 0.0))),
                       float(np.float32(params["rescale_grad"])),
                       float(np.float32(params["clip_gradient"])), n, len(spec.per_weight),
                       int(spec.mom), int(spec.mp), int(spec.preloaded), 0)
    if spec.preloaded:
        return head
    rates = [float(np.float32(v)) for v in (*params["lrs"], *params["wds"])]
    return head + struct.pack(f"={2 * n}d", *rates)


def _check_count(name, params, inputs):
    spec = MULTI[name]
    n, per = params["num_weights"], len(spec.per_weight)
    want = n * per + (2 if spec.preloaded else 0)
    if len(inputs) != want:
        raise ShapeError(f"{name}: num_weights={n} needs {want} inputs ({', '.join(spec.per_weight)}"
                         f" per weight{', then lrs and wds' if spec.preloaded else ''}); got "
                         f"{len(inputs)}")
    if not spec.preloaded:
        for key in ("lrs", "wds"):
            if len(params[key]) != n:
                raise ParamError(f"{name}: argument '{key}' has {len(params[key])} value(s); "
                                 f"num_weights is {n}")
    return spec, n, per


def _multi_shapes(name):
    def infer(params, shapes):
        spec, n, per = _check_count(name, params, shapes)
        names = spec.input_names(params)
        for k in range(n):
            w = tuple(shapes[k * per])
            for j in range(1, per):
                s = tuple(shapes[k * per + j])
                if s != w:
                    raise ShapeError(f"{name}: argument '{names[k * per + j]}' has shape {s}, "
                                     f"which differs from 'weight_{k}' {w}")
        if spec.preloaded:
            for j, key in enumerate(("lrs", "wds")):
                s = tuple(shapes[n * per + j])
                if s != (n,):
                    raise ShapeError(f"{name}: argument '{key}' has shape {s}; expected "
                                     f"({n},) for num_weights={n}")
        return [tuple(shapes[k * per]) for k in range(n)]
    return infer


def _multi_types(name):
    def infer(params, dtypes):
        spec, n, per = _check_count(name, params, dtypes)
        names = spec.input_names(params)
        w = dtypes[0]
        if w not in FLOATS:
            raise TypeInferenceError(f"{name}: argument 'weight_0' has dtype {w}; supported: "
                                     f"{', '.join(FLOATS)}")
        for i, d in enumerate(dtypes):
            j = i % per if i < n * per else None
            want = F32 if (j is None or spec.fp32(j)) else w
            if d != want:
                why = ("a float32 input" if want == F32 and w != F32 else
                       f"'weight_0' is {w}")
                raise TypeInferenceError(f"{name}: argument '{names[i]}' has dtype {d}; "
                                         f"expected {want} ({why})")
        return [w] * n
    return infer


def _multi_partial_shapes(name):
    """Each weight's inputs and output share a shape; lrs, wds (num_weights,)."""
    spec = MULTI[name]
    per = len(spec.per_weight)

    def rule(params, ins, outs):
        n = params["num_weights"]
        for k in range(n):
            same_shape(list(range(k * per, (k + 1) * per)), [k])(params, ins, outs)
        if spec.preloaded:
            for j in (0, 1):
                ins.assign(n * per + j, (n,), why=f"num_weights is {n}")
        return ins, outs
    return rule


def _multi_partial_types(name):
    spec = MULTI[name]
    per = len(spec.per_weight)

    def rule(params, ins, outs):
        n = params["num_weights"]
        plain = [i for i in range(n * per) if not spec.fp32(i % per)]
        for i in range(len(ins)):
            if i not in plain:
                ins.assign(i, F32, why="a float32 input")
        known = next((v for v in [ins[i] for i in plain] + list(outs) if v is not None), None)
        if known is not None:
            for i in plain:
                ins.assign(i, known)
            for k in range(len(outs)):
                outs.assign(k, known)
        return ins, outs
    return rule


def _outputs(params):
    n = params["num_weights"]
    return ["output"] if n == 1 else [f"output{k}" for k in range(n)]


for _name, _spec in MULTI.items():
    register(OpDef(
        _name, arguments=("data",), var_inputs=True, list_input_names=_spec.input_names,
        outputs=_outputs, params=_spec.params(),
        input_docs={"data": ("Weights, gradients" + (", momentums" if _spec.mom else "")
                             + (", float32 master weights" if _spec.mp else "")
                             + (", learning rates and weight decays" if _spec.preloaded
                                else ""))},
        infer_shape=_multi_shapes(_name), infer_type=_multi_types(_name),
        compute=computes(_KERNELS["multi_sgd"], gpu_compute(_GPU, "multi_compute", _name)),
        pack_params=lambda p, s, _n=_name: pack_multi(_n, p), mutate_inputs=_spec.mutated,
        differentiable=False, doc=_spec.doc))
    set_infer_shape_partial(_name, _multi_partial_shapes(_name))
    set_infer_type_partial(_name, _multi_partial_types(_name))


# --- multi_sum_sq, multi_lars ---------------------------------------------------------------
def _sum_sq_types(params, dtypes):
    for i, d in enumerate(dtypes):
        if d != dtypes[0]:
            raise TypeInferenceError(f"multi_sum_sq: argument 'array_{i}' has dtype {d}, "
                                     f"which differs from 'array_0' {dtypes[0]}")
    if dtypes[0] not in FLOATS:
        raise TypeInferenceError(f"multi_sum_sq: argument 'array_0' has dtype {dtypes[0]}; "
                                 f"supported: {', '.join(FLOATS)}")
    return [F32]


register(OpDef(
    "multi_sum_sq", arguments=("data",), key_var_num_args="num_arrays",
    list_input_names=lambda p: [f"array_{i}" for i in range(p["num_arrays"])],
    params={"num_arrays": Param("int", low=1, high=MAX_COUNT, doc="number of input arrays.")},
    input_docs={"data": "Arrays."},
    infer_shape=lambda p, shapes: [(p["num_arrays"],)], infer_type=_sum_sq_types,
    compute=computes(_KERNELS["multi_sum_sq"], gpu_compute(_GPU, "sum_sq_compute")),
    differentiable=False,
    doc="Compute the sums of squares of multiple arrays: output i (float32, shape "
        "(num_arrays,)) is the sum of the squares of array i's elements."))
set_infer_type_partial("multi_sum_sq", fixed_type(F32))

_LARS_INPUTS = ("lrs", "weights_sum_sq", "grads_sum_sq", "wds")


def _lars_shapes(params, shapes):
    for name, s in zip(_LARS_INPUTS[1:], shapes[1:]):
        if tuple(s) != tuple(shapes[0]):
            raise ShapeError(f"multi_lars: argument '{name}' has shape {tuple(s)}, which "
                             f"differs from 'lrs' {tuple(shapes[0])}")
    return [tuple(shapes[0])]


def _lars_types(params, dtypes):
    for name, d in zip(_LARS_INPUTS, dtypes):
        if d != F32:
            raise TypeInferenceError(f"multi_lars: argument '{name}' has dtype {d}; MultiLARS "
                                     f"only supports float32")
    return [F32]


register(OpDef(
    "multi_lars", arguments=_LARS_INPUTS,
    params={"eta": Param("float", doc="LARS eta"), "eps": Param("float", doc="LARS eps"),
            "rescale_grad": Param("float", 1.0, doc="Gradient rescaling factor")},
    input_docs={"lrs": "Learning rates to scale by LARS coefficient",
                "weights_sum_sq": "sum of square of weights arrays",
                "grads_sum_sq": "sum of square of gradients arrays", "wds": "weight decays"},
    infer_shape=_lars_shapes, infer_type=_lars_types,
    compute=computes(_KERNELS["multi_lars"], gpu_compute(_GPU, "lars_compute")),
    pack_params=lambda p, s: struct.pack(
        "=3d", *[float(np.float32(p[k])) for k in ("eta", "eps", "rescale_grad")]),
    differentiable=False,
    doc="Compute the LARS coefficients of multiple weights: lrs*eta*|w|/(|g|*rescale_grad + "
        "wds*|w| + eps), with |w| = sqrt(weights_sum_sq), |g| = sqrt(grads_sum_sq), where "
        "both are positive; lrs elsewhere."))
set_infer_shape_partial("multi_lars", same_shape())
