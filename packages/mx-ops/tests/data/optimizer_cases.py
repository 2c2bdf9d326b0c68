"""The cases of optimizer_mxnet191.npz (make_optimizer_reference.py writes
it with MXNet 1.9.1; test_optimizer_fused.py runs ours on the same inputs).

A case: the operator, its inputs as (role, dtype, shape) in MXNet's order,
its parameters, and how many steps it runs.  With ``inplace`` each step
writes its outputs into the weights (``out=weight``, as MXNet's Python
optimizers call them) and takes a fresh gradient; otherwise one call writes
new outputs.  ``inputs(case, step)`` draws the same values on both sides."""
import zlib

import numpy as np

# Roles whose values must be positive (second moments, norms) or are gradients.
POSITIVE = {"var", "n", "v", "d", "r1", "r2", "sum_sq"}
GRADS = {"grad"}
F16, F32, F64 = "float16", "float32", "float64"


def _one(op, dtype, shape=(5, 7), *, states=(), mp=False, params, steps=3, inplace=True):
    """A single-weight update: weight, grad, the states (of dtype, or
    float32 with mp), then weight32 with mp."""
    state_dtype = F32 if mp else dtype
    ins = [("weight", dtype, shape), ("grad", dtype, shape)]
    ins += [(s, state_dtype, shape) for s in states]
    if mp:
        ins.append(("weight32", F32, shape))
    return dict(op=op, inputs=ins, params=params, steps=steps, inplace=inplace)


SHAPES = [(4, 6), (9,), (2, 3, 5)]


def _multi(op, dtype, per_weight, params, preloaded=False, steps=3):
    """A multi_* update of len(SHAPES) weights: per weight the roles of
    ``per_weight`` (weight32 and mom float32 when 'weight32' is among
    them), then lrs and wds (float32, (num_weights,)) when preloaded."""
    mp = "weight32" in per_weight
    ins = []
    for shape in SHAPES:
        ins += [(r, F32 if (mp and r in ("mom", "weight32")) else dtype, shape)
                for r in per_weight]
    if preloaded:
        ins += [("lrs", F32, (len(SHAPES),)), ("wds", F32, (len(SHAPES),))]
    return dict(op=op, inputs=ins, params=dict(params, num_weights=len(SHAPES)), steps=steps,
                inplace=True, num_outputs=len(SHAPES))


BASIC = dict(lr=0.1)
FULL = dict(lr=0.05, wd=0.02, rescale_grad=0.5, clip_gradient=0.4)
MOM = dict(lr=0.1, momentum=0.9)
MOM_FULL = dict(FULL, momentum=0.8)
LRS = dict(lrs=(0.1, 0.05, 0.2), wds=(0.0, 0.01, 0.03))
LAMB1 = dict(t=3, wd=0.01)
LAMB1_FULL = dict(t=7, wd=0.1, beta1=0.8, beta2=0.99, epsilon=1e-5, bias_correction=False,
                  rescale_grad=2.0, clip_gradient=0.5)

CASES = {}
for _dt in (F16, F32, F64):
    CASES[f"sgd_mom_{_dt}"] = _one("sgd_mom_update", _dt, states=("mom",), params=MOM_FULL)
    CASES[f"nag_{_dt}"] = _one("nag_mom_update", _dt, states=("mom",), params=MOM)
    CASES[f"nag_full_{_dt}"] = _one("nag_mom_update", _dt, states=("mom",), params=MOM_FULL)
    CASES[f"signsgd_{_dt}"] = _one("signsgd_update", _dt, params=dict(FULL, rescale_grad=-1.0))
    CASES[f"signum_{_dt}"] = _one("signum_update", _dt, states=("mom",), params=MOM)
    CASES[f"signum_full_{_dt}"] = _one("signum_update", _dt, states=("mom",),
                                       params=dict(MOM_FULL, wd_lh=0.05))
    CASES[f"ftml_{_dt}"] = _one("ftml_update", _dt, states=("d", "v", "z"),
                                params=dict(lr=0.05, t=2))
    CASES[f"ftml_full_{_dt}"] = _one(
        "ftml_update", _dt, states=("d", "v", "z"),
        params=dict(lr=0.1, t=5, beta1=0.5, beta2=0.99, epsilon=1e-6, wd=0.03,
                    rescale_grad=0.7, clip_grad=0.6))
    CASES[f"rmspropalex_{_dt}"] = _one("rmspropalex_update", _dt, states=("n", "g", "delta"),
                                       params=dict(lr=0.01))
    CASES[f"rmspropalex_full_{_dt}"] = _one(
        "rmspropalex_update", _dt, states=("n", "g", "delta"),
        params=dict(lr=0.05, gamma1=0.9, gamma2=0.8, epsilon=1e-6, wd=0.01, rescale_grad=0.5,
                    clip_gradient=0.3, clip_weights=0.8))
    CASES[f"lamb1_{_dt}"] = _one("lamb_update_phase1", _dt, states=("mean", "var"),
                                 params=LAMB1, steps=1, inplace=False)
    CASES[f"lamb1_full_{_dt}"] = _one("lamb_update_phase1", _dt, states=("mean", "var"),
                                      params=LAMB1_FULL, steps=1, inplace=False)
    CASES[f"lamb2_{_dt}"] = dict(
        op="lamb_update_phase2", params=dict(lr=0.1), steps=1, inplace=False,
        inputs=[("weight", _dt, (5, 7)), ("g", _dt, (5, 7)), ("r1", _dt, (1,)),
                ("r2", _dt, (1,))])
    CASES[f"lamb2_bounds_{_dt}"] = dict(CASES[f"lamb2_{_dt}"],
                                        params=dict(lr=0.1, lower_bound=1.5, upper_bound=2.0))
    CASES[f"multi_sgd_{_dt}"] = _multi("multi_sgd_update", _dt, ("weight", "grad"),
                                       dict(LRS, rescale_grad=0.5, clip_gradient=0.4))
    CASES[f"multi_sgd_mom_{_dt}"] = _multi("multi_sgd_mom_update", _dt,
                                           ("weight", "grad", "mom"), dict(LRS, momentum=0.9))
    CASES[f"preloaded_sgd_{_dt}"] = _multi("preloaded_multi_sgd_update", _dt,
                                           ("weight", "grad"), dict(rescale_grad=2.0),
                                           preloaded=True)
    CASES[f"preloaded_sgd_mom_{_dt}"] = _multi(
        "preloaded_multi_sgd_mom_update", _dt, ("weight", "grad", "mom"),
        dict(momentum=0.7, clip_gradient=0.5), preloaded=True)
    CASES[f"multi_sum_sq_{_dt}"] = dict(
        op="multi_sum_sq", params=dict(num_arrays=len(SHAPES)), steps=1, inplace=False,
        inputs=[("data", _dt, s) for s in SHAPES])

for _dt in (F16, F32, F64):         # MXNet's mp_ kernels take float16, float32 and float64
    CASES[f"mp_sgd_{_dt}"] = _one("mp_sgd_update", _dt, mp=True, params=FULL)
    CASES[f"mp_sgd_mom_{_dt}"] = _one("mp_sgd_mom_update", _dt, states=("mom",), mp=True,
                                      params=MOM_FULL)
    CASES[f"mp_nag_{_dt}"] = _one("mp_nag_mom_update", _dt, states=("mom",), mp=True,
                                  params=MOM_FULL)
    CASES[f"mp_lamb2_{_dt}"] = dict(
        op="mp_lamb_update_phase2", params=dict(lr=0.1, lower_bound=0.5), steps=1,
        inplace=False,
        inputs=[("weight", _dt, (5, 7)), ("g", F32, (5, 7)), ("r1", F32, (1,)),
                ("r2", F32, (1,)), ("weight32", F32, (5, 7))])
    CASES[f"multi_mp_sgd_{_dt}"] = _multi("multi_mp_sgd_update", _dt,
                                          ("weight", "grad", "weight32"),
                                          dict(LRS, wds=(0.1, 0.0, 0.02), clip_gradient=0.3))
    CASES[f"multi_mp_sgd_mom_{_dt}"] = _multi(
        "multi_mp_sgd_mom_update", _dt, ("weight", "grad", "mom", "weight32"),
        dict(LRS, momentum=0.9, rescale_grad=0.25))
    CASES[f"preloaded_mp_sgd_{_dt}"] = _multi("preloaded_multi_mp_sgd_update", _dt,
                                              ("weight", "grad", "weight32"), {},
                                              preloaded=True)
    CASES[f"preloaded_mp_sgd_mom_{_dt}"] = _multi(
        "preloaded_multi_mp_sgd_mom_update", _dt, ("weight", "grad", "mom", "weight32"),
        dict(momentum=0.5, rescale_grad=3.0, clip_gradient=1.0), preloaded=True)

# mp_lamb_update_phase1 takes float16 weights and gradients only.
CASES["mp_lamb1_float16"] = _one("mp_lamb_update_phase1", F16, states=("mean", "var"), mp=True,
                                 params=LAMB1_FULL, steps=1, inplace=False)
CASES["multi_lars"] = dict(
    op="multi_lars", params=dict(eta=0.01, eps=1e-8, rescale_grad=0.5), steps=1, inplace=False,
    inputs=[("lrs", F32, (6,)), ("sum_sq", F32, (6,)), ("sum_sq", F32, (6,)),
            ("wds", F32, (6,))])


def inputs(name, step=0):
    """The inputs of case ``name`` at ``step`` (the gradients change per
    step; the other inputs are the starting values)."""
    case = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1000 * step)
    out, last_weight = [], None
    for role, dtype, shape in case["inputs"]:
        if role in POSITIVE:
            x = rng.uniform(0.5, 1.5, shape)
        elif role in GRADS:
            x = rng.standard_normal(shape) * 1.5
        elif role in ("lrs", "wds"):
            x = rng.uniform(0.0, 0.1 if role == "wds" else 0.3, shape)
        elif role == "weight32":          # the float32 master copy of the weight before it
            x = last_weight
        else:                             # weights, signed states, lamb's g
            x = rng.standard_normal(shape) * (0.3 if role in ("g", "mom", "delta", "z") else 1)
        if role == "weight":
            last_weight = x
        if role == "sum_sq" and case["op"] == "multi_lars":
            x[0] = 0.0                    # a zero norm keeps the learning rate
        out.append(np.asarray(x).astype(dtype))
    return out


def gradient_positions(name):
    """Indices of the inputs that a step replaces (the gradients)."""
    return [i for i, (role, _, _) in enumerate(CASES[name]["inputs"]) if role in GRADS]
