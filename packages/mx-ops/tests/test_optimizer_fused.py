"""The fused updates of fused.py and multi.py (nag, signum, ftml,
rmspropalex, lamb, the mp_ variants, multi_* / preloaded_multi_*,
multi_sum_sq, multi_lars) against MXNet 1.9.1's outputs recorded in
data/optimizer_mxnet191.npz (data/make_optimizer_reference.py; cases in
data/optimizer_cases.py), against NumPy formulas, with Hypothesis over
shapes, and their errors."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_ops import invoke, registry
from mx_ops.core.partial_infer import infer_shapes, infer_types
from mx_ops.core.registry import ShapeError, TypeInferenceError

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from optimizer_cases import CASES, gradient_positions, inputs  # noqa: E402

REFERENCE = np.load(DATA / "optimizer_mxnet191.npz")
# MXNet computes float16 in half_t (rounding after every operation); ours in
# float.  float64 parameters are float32-rounded on both sides.
TOL = {"float16": 4e-3, "float32": 2e-5, "float64": 1e-11}


def run_case(name, device=np.asarray):
    """Our operator over the case's steps, as make_optimizer_reference.py
    runs MXNet's: (inputs after, outputs of the last call); ``device`` puts
    an array where the call runs (cupy.asarray: the GPU twin)."""
    case = CASES[name]
    xs = [device(x) for x in inputs(name)]
    weights = [i for i, (role, _, _) in enumerate(case["inputs"]) if role == "weight"]
    nout = case.get("num_outputs", 1)
    ys = None
    for step in range(case["steps"]):
        if step:
            fresh = inputs(name, step)
            for i in gradient_positions(name):
                xs[i] = device(fresh[i])
        if case["inplace"]:
            outs = [xs[i] for i in weights[:nout]]
            ys = invoke(case["op"], xs, out=outs if nout > 1 else outs[0], **case["params"])
        else:
            ys = invoke(case["op"], xs, **case["params"])
    return xs, ys if isinstance(ys, (list, tuple)) else [ys]


def _tol(name):
    """The tolerance of the least precise dtype the case holds: a float64
    update with float32 inputs (mp_, preloaded rates) or outputs
    (multi_sum_sq) computes partly in float32, in MXNet too."""
    dtypes = {d for _, d, _ in CASES[name]["inputs"]}
    dtypes |= {REFERENCE[k].dtype.name for k in REFERENCE.files if k.startswith(name + "/out")}
    if "lamb_update" in CASES[name]["op"] and CASES[name]["op"].startswith("_multi"):
        dtypes.add("float32")               # LAMB's trust ratio is a float32 on both sides
    return max(TOL[d] for d in dtypes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet_1_9_1(name):
    case = CASES[name]
    xs, ys = run_case(name)
    tol = _tol(name)
    for i, x in enumerate(xs):
        want = REFERENCE[f"{name}/in{i}"]
        assert x.dtype == want.dtype and x.shape == want.shape
        np.testing.assert_allclose(x.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol, err_msg=f"{name}: input {i} "
                                                     f"({case['inputs'][i][0]}) after the steps")
    for k, y in enumerate(ys):
        want = REFERENCE[f"{name}/out{k}"]
        assert y.dtype == want.dtype and y.shape == want.shape, (name, k, y.dtype, want.dtype)
        np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol, err_msg=f"{name}: output {k}")


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_twin_matches_cpu(name):
    cupy = pytest.importorskip("cupy")
    cpu_xs, cpu_ys = run_case(name)
    gpu_xs, gpu_ys = run_case(name, cupy.asarray)
    tol = _tol(name)
    for i, (c, g) in enumerate(zip(cpu_xs + cpu_ys, gpu_xs + gpu_ys)):
        g = cupy.asnumpy(g)
        assert g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64), rtol=tol,
                                   atol=tol, err_msg=f"{name}: array {i}")


# --- NumPy formulas (float64), independent of the kernels' code ----------------------------
def _clip(v, c):
    return v if c < 0 else np.clip(v, -c, c)


def _as_mxnet(name, params):
    """The parameters as MXNet's fields hold them: float32 (ftml's epsilon is
    a double; ints and bools as they are)."""
    double = ("epsilon",) if name == "ftml_update" else ()
    return {k: v if isinstance(v, (bool, int)) or k in double else float(np.float32(v))
            for k, v in params.items()}


def numpy_step(name, xs, p, in_place=True):
    """MXNet 1.9.1's formula of ``name`` on float64 copies: (new inputs,
    output).  ``in_place``: the output is the weight (nag_mom_update's
    momentum then decays with the new weight)."""
    xs = [x.astype(np.float64) for x in xs]
    lr, wd, rs = p.get("lr", 0.0), p.get("wd", 0.0), p.get("rescale_grad", 1.0)
    g = _clip(rs * xs[1], p.get("clip_gradient", -1.0))
    w = xs[-1] if name.startswith("mp_") else xs[0]
    m = p.get("momentum", 0.0)
    if name in ("nag_mom_update", "mp_nag_mom_update"):
        step = lr * (g + wd * w)
        new = w + m * (m * xs[2] - step) - step
        decayed = new if in_place or name.startswith("mp_") else w
        xs[2] = m * xs[2] - lr * (g + wd * decayed)     # see NagMom
        out = new
    elif name == "mp_sgd_update":
        out = (1 - lr * wd) * w - lr * g
    elif name == "mp_sgd_mom_update":
        xs[2] = m * xs[2] - lr * wd * w - lr * g
        out = w + xs[2]
    elif name == "signsgd_update":
        out = (1 - lr * wd) * w - lr * np.sign(xs[1])
    elif name == "signum_update":
        xs[2] = m * xs[2] - (1 - m) * (wd * w + g)
        out = (1 - lr * p.get("wd_lh", 0.0)) * w + lr * np.sign(xs[2])
    elif name == "ftml_update":
        b1, b2, eps, t = p.get("beta1", 0.6), p.get("beta2", 0.999), p.get("epsilon", 1e-8), p["t"]
        gg = _clip(rs * xs[1] + wd * w, p.get("clip_grad", -1.0))
        xs[3] = b2 * xs[3] + (1 - b2) * gg * gg
        d_t = (1 - b1 ** t) / lr * (np.sqrt(xs[3] / (1 - b2 ** t)) + eps)
        xs[4] = b1 * xs[4] + (1 - b1) * gg - (d_t - b1 * xs[2]) * w
        xs[2] = d_t + 0 * w
        out = -xs[4] / d_t
    elif name == "rmspropalex_update":
        g1, g2, eps = p.get("gamma1", 0.95), p.get("gamma2", 0.9), p.get("epsilon", 1e-8)
        gg = _clip(rs * xs[1] + wd * w, p.get("clip_gradient", -1.0))
        xs[2] = (1 - g1) * gg * gg + g1 * xs[2]
        xs[3] = (1 - g1) * gg + g1 * xs[3]
        xs[4] = g2 * xs[4] - lr * gg / np.sqrt(xs[2] - xs[3] ** 2 + eps)
        out = _clip(w + xs[4], p.get("clip_weights", -1.0))
    elif name in ("lamb_update_phase1", "mp_lamb_update_phase1"):
        b1, b2, eps, t = p.get("beta1", 0.9), p.get("beta2", 0.999), p.get("epsilon", 1e-6), p["t"]
        xs[2] = b1 * xs[2] + (1 - b1) * g
        xs[3] = b2 * xs[3] + (1 - b2) * g * g
        mh, vh = xs[2], xs[3]
        if p.get("bias_correction", True):
            mh, vh = mh / (1 - b1 ** t), vh / (1 - b2 ** t)
        out = mh / (np.sqrt(vh) + eps) + wd * w
    elif name in ("_adamw_update", "_mp_adamw_update"):
        r = float(xs[-1].reshape(-1)[0])
        if not np.isfinite(r) or r == 0:
            return xs, None                             # skipped: nothing written
        g = _clip(r * xs[1], p.get("clip_gradient", -1.0))
        w = xs[4] if name == "_mp_adamw_update" else xs[0]
        b1, b2, eps = p.get("beta1", 0.9), p.get("beta2", 0.999), p.get("epsilon", 1e-8)
        xs[2] = b1 * xs[2] + (1 - b1) * g
        xs[3] = b2 * xs[3] + (1 - b2) * g * g
        out = w - p["eta"] * (lr * xs[2] / (np.sqrt(xs[3]) + eps) + wd * w)
        if name == "_mp_adamw_update":
            xs[4] = out
        else:
            xs[1] = g                                   # MXNet leaves the scaled gradient
        return xs, out
    elif name in ("lamb_update_phase2", "mp_lamb_update_phase2"):
        r1, r2 = xs[2][0], xs[3][0]
        if p.get("lower_bound", -1.0) >= 0:
            r1 = max(r1, p["lower_bound"])
        if p.get("upper_bound", -1.0) >= 0:
            r1 = min(r1, p["upper_bound"])
        ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
        out = w - lr * ratio * xs[1]
    else:
        raise KeyError(name)
    if name.startswith("mp_") and name != "mp_lamb_update_phase2" and "phase1" not in name:
        xs[-1] = out
    return xs, out


def _draw_inputs(name, shape, dtype, rng):
    spec = fused.SPECS[name]
    xs = []
    for i, role in enumerate(spec.inputs):
        s = (1,) if role in ("r1", "r2", "rescale_grad") else shape
        lo = 0.5 if role in ("var", "n", "v", "d", "r1", "r2") else -1.0
        x = rng.uniform(lo, 1.5, s) if lo > 0 else rng.standard_normal(s)
        xs.append(x.astype("float32" if i in spec.fp32 else dtype))
    if "weight32" in spec.inputs:
        xs[spec.inputs.index("weight32")] = xs[0].astype(np.float32)
    if "n" in spec.inputs and "g" in spec.inputs:
        # centered RMSProp's states are running means of g^2 and g, so n >= g^2
        # (otherwise the reference takes the root of a negative: NaN on both sides)
        n, g = spec.inputs.index("n"), spec.inputs.index("g")
        xs[g] = np.array(np.tanh(xs[g]) * 0.9 * np.sqrt(xs[n]), dtype=xs[g].dtype)
    return xs


FUSED_PARAMS = {
    "nag_mom_update": dict(lr=0.1, momentum=0.9, wd=0.1, rescale_grad=0.5, clip_gradient=0.3),
    "mp_nag_mom_update": dict(lr=0.1, momentum=0.5, wd=0.2),
    "mp_sgd_update": dict(lr=0.2, wd=0.1, clip_gradient=0.5),
    "mp_sgd_mom_update": dict(lr=0.2, momentum=0.75, wd=0.1, rescale_grad=2.0),
    "signsgd_update": dict(lr=0.1, wd=0.25),
    "signum_update": dict(lr=0.1, momentum=0.5, wd=0.25, wd_lh=0.125, clip_gradient=0.5),
    "ftml_update": dict(lr=0.1, t=3, beta1=0.5, beta2=0.75, epsilon=1e-6, wd=0.1,
                        clip_grad=0.8),
    "rmspropalex_update": dict(lr=0.01, gamma1=0.5, gamma2=0.75, wd=0.1, clip_weights=1.0),
    "lamb_update_phase1": dict(t=2, wd=0.1, beta1=0.5, beta2=0.75, rescale_grad=0.5),
    "mp_lamb_update_phase1": dict(t=4, wd=0.0, bias_correction=False, clip_gradient=0.25),
    "lamb_update_phase2": dict(lr=0.1, lower_bound=0.75, upper_bound=1.25),
    "mp_lamb_update_phase2": dict(lr=0.5, upper_bound=0.75),
    "_adamw_update": dict(lr=0.1, eta=0.5, wd=0.25, beta1=0.75, clip_gradient=0.5),
    "_mp_adamw_update": dict(lr=0.1, eta=2.0, epsilon=1e-4),
}
from mx_ops.ops.optimizer import fused, multi  # noqa: E402


def test_every_fused_operator_has_a_formula_case():
    assert set(FUSED_PARAMS) == set(fused.SPECS)
    assert {c["op"] for c in CASES.values()} >= set(fused.SPECS) | set(multi.MULTI)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(FUSED_PARAMS)),
       shape=st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple),
       seed=st.integers(0, 2 ** 16), in_place=st.booleans())
def test_fused_formulas_match_numpy(name, shape, seed, in_place):
    """float64 (the mp_ kinds: their float16 and float32 weights) against the
    formulas in float64, over shapes (empty and 0-d ones too)."""
    spec = fused.SPECS[name]
    dtype = "float64" if "float64" in spec.weight_dtypes else "float16"
    xs = _draw_inputs(name, shape, dtype, np.random.default_rng(seed))
    params = FUSED_PARAMS[name]
    out_given = in_place and bool(spec.inplace)
    want_xs, want = numpy_step(name, xs, _as_mxnet(name, params), in_place=out_given)
    got = invoke(name, xs, out=xs[0] if out_given else None, **params)
    f32 = bool(spec.fp32)
    tol = 1e-5 if f32 else 1e-12
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)
    for i, (x, w) in enumerate(zip(xs, want_xs)):
        if i in spec.mutate:
            np.testing.assert_allclose(x.astype(np.float64), w, rtol=tol, atol=tol,
                                       err_msg=spec.inputs[i])


# --- the aggregated updates ------------------------------------------------------------------
def numpy_multi(spec, groups, lrs, wds, p):
    """multi_cpu.h's step per weight in float64: (new groups, new weights)."""
    outs, new_groups = [], []
    for grp, lr, wd in zip(groups, lrs, wds):
        grp = [x.astype(np.float64) for x in grp]
        mp = spec.mp and groups[0][0].dtype != np.float32
        w = grp[-1] if mp else grp[0]
        g = _clip(p.get("rescale_grad", 1.0) * grp[1], p.get("clip_gradient", -1.0))
        if spec.mom:
            grp[2] = p["momentum"] * grp[2] - lr * wd * w - lr * g
            w = w + grp[2]
        else:
            w = w - lr * (wd * w + g)
        if mp:
            grp[-1] = w
        grp[0] = w                  # out=weights: the weights update in place
        outs.append(w)
        new_groups.append(grp)
    return new_groups, outs


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(multi.MULTI)), n=st.integers(1, 4),
       shapes=st.lists(st.lists(st.integers(0, 4), max_size=3).map(tuple), min_size=4,
                       max_size=4),
       dtype=st.sampled_from(["float16", "float32", "float64"]), seed=st.integers(0, 2 ** 16))
def test_multi_updates_match_numpy(name, n, shapes, dtype, seed):
    spec = multi.MULTI[name]
    rng = np.random.default_rng(seed)
    groups = []
    for k in range(n):
        grp = [rng.standard_normal(shapes[k]).astype(
            "float32" if spec.fp32(j) else dtype) for j in range(len(spec.per_weight))]
        if spec.mp:
            grp[-1] = grp[0].astype(np.float32)
        groups.append(grp)
    lrs = [float(np.float32(v)) for v in rng.uniform(0.01, 0.5, n)]
    wds = [float(np.float32(v)) for v in rng.uniform(0.0, 0.1, n)]
    params = dict(rescale_grad=0.5, clip_gradient=0.75, num_weights=n,
                  **({"momentum": 0.5} if spec.mom else {}))
    flat = [x for grp in groups for x in grp]
    if spec.preloaded:
        flat += [np.array(lrs, np.float32), np.array(wds, np.float32)]
    else:
        params.update(lrs=tuple(lrs), wds=tuple(wds))
    want_groups, want = numpy_multi(spec, groups, lrs, wds, params)
    weights = [grp[0] for grp in groups]
    got = invoke(name, flat, out=weights if n > 1 else weights[0], **params)
    got = got if isinstance(got, (list, tuple)) else [got]
    tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-5 if spec.mp else 1e-12}[dtype]
    for k in range(n):
        assert got[k] is weights[k]
        np.testing.assert_allclose(got[k].astype(np.float64), want[k], rtol=tol, atol=tol)
        for j, (x, w) in enumerate(zip(groups[k], want_groups[k])):
            np.testing.assert_allclose(x.astype(np.float64), w, rtol=tol, atol=tol,
                                       err_msg=f"{spec.per_weight[j]}_{k}")


def test_multi_reqs_per_output():
    """Each output honours its own req; the momenta update whatever it is."""
    rng = np.random.default_rng(7)
    ws = [rng.standard_normal(5) for _ in range(3)]
    gs = [rng.standard_normal(5) for _ in range(3)]
    moms = [rng.standard_normal(5) for _ in range(3)]
    # values float32 holds exactly, as MXNet's parameters are float32
    params = dict(lrs=(0.125, 0.25, 0.5), wds=(0.0, 0.0625, 0.0), momentum=0.5, num_weights=3)
    spec = multi.MULTI["multi_sgd_mom_update"]
    want_groups, want = numpy_multi(spec, [[w, g, m] for w, g, m in zip(ws, gs, moms)],
                                    params["lrs"], params["wds"], params)
    bufs = [np.full(5, 2.0) for _ in range(3)]
    flat = [x for trio in zip(ws, gs, moms) for x in trio]
    invoke("multi_sgd_mom_update", flat, out=bufs, req=["write", "add", "null"], **params)
    np.testing.assert_allclose(bufs[0], want[0], rtol=1e-14)
    np.testing.assert_allclose(bufs[1], 2.0 + want[1], rtol=1e-14)
    np.testing.assert_array_equal(bufs[2], np.full(5, 2.0))
    for k in range(3):
        np.testing.assert_allclose(moms[k], want_groups[k][2], rtol=1e-14)


def test_large_multi_update_splits_across_workers():
    """Arrays above the parallel threshold (one range over all of them) give
    the serial formula's result; multi_sum_sq does not depend on the split."""
    rng = np.random.default_rng(11)
    sizes = [(1 << 18) + 3, 5, (1 << 17) + 64]
    ws = [rng.standard_normal(s).astype(np.float32) for s in sizes]
    gs = [rng.standard_normal(s).astype(np.float32) for s in sizes]
    moms = [np.zeros(s, np.float32) for s in sizes]
    params = dict(lrs=(0.125, 0.25, 0.5), wds=(0.0625, 0.0, 0.03125), momentum=0.5,
                  num_weights=3)
    spec = multi.MULTI["multi_sgd_mom_update"]
    _, want = numpy_multi(spec, [[w, g, m] for w, g, m in zip(ws, gs, moms)],
                          params["lrs"], params["wds"], params)
    flat = [x for trio in zip(ws, gs, moms) for x in trio]
    invoke("multi_sgd_mom_update", flat, out=ws, **params)
    for w, ref in zip(ws, want):
        np.testing.assert_allclose(w, ref, rtol=1e-5, atol=1e-6)
    sums = invoke("multi_sum_sq", ws + gs)
    want_sums = [np.sum(x.astype(np.float64) ** 2) for x in ws + gs]
    np.testing.assert_allclose(sums, want_sums, rtol=1e-6)
    assert sums.dtype == np.float32 and sums.shape == (6,)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 2 ** 16))
def test_multi_lars_matches_numpy(n, seed):
    rng = np.random.default_rng(seed)
    lrs, wds = rng.uniform(0, 1, n).astype(np.float32), rng.uniform(0, 0.1, n).astype(np.float32)
    wss, gss = (rng.uniform(0, 4, n) * (rng.uniform(size=n) > 0.2)).astype(np.float32), \
        (rng.uniform(0, 4, n) * (rng.uniform(size=n) > 0.2)).astype(np.float32)
    eta, eps, rs = 0.01, 1e-6, 0.5
    got = invoke("multi_lars", [lrs, wss, gss, wds], eta=eta, eps=eps, rescale_grad=rs)
    wn, gn = np.sqrt(wss.astype(np.float64)), np.sqrt(gss.astype(np.float64))
    ok = (wss > 0) & (gss > 0)
    want = np.where(ok, lrs * np.float32(eta) * wn / np.where(ok, gn * rs + wds * wn +
                                                                np.float32(eps), 1), lrs)
    np.testing.assert_allclose(got, want, rtol=1e-5)


# --- registration, errors ---------------------------------------------------------------------
# MXNet 1.9.1's parameters, in its order (mx.nd.<op>.__doc__).
MXNET_PARAMS = {
    "mp_sgd_update": ["lr", "wd", "rescale_grad", "clip_gradient", "lazy_update"],
    "mp_sgd_mom_update": ["lr", "momentum", "wd", "rescale_grad", "clip_gradient",
                          "lazy_update"],
    "nag_mom_update": ["lr", "momentum", "wd", "rescale_grad", "clip_gradient"],
    "mp_nag_mom_update": ["lr", "momentum", "wd", "rescale_grad", "clip_gradient"],
    "signsgd_update": ["lr", "wd", "rescale_grad", "clip_gradient"],
    "signum_update": ["lr", "momentum", "wd", "rescale_grad", "clip_gradient", "wd_lh"],
    "ftml_update": ["lr", "beta1", "beta2", "epsilon", "t", "wd", "rescale_grad", "clip_grad"],
    "rmspropalex_update": ["lr", "gamma1", "gamma2", "epsilon", "wd", "rescale_grad",
                           "clip_gradient", "clip_weights"],
    "lamb_update_phase1": ["beta1", "beta2", "epsilon", "t", "bias_correction", "wd",
                           "rescale_grad", "clip_gradient"],
    "lamb_update_phase2": ["lr", "lower_bound", "upper_bound"],
    "multi_sgd_update": ["lrs", "wds", "rescale_grad", "clip_gradient", "num_weights"],
    "multi_sgd_mom_update": ["lrs", "wds", "momentum", "rescale_grad", "clip_gradient",
                             "num_weights"],
    "preloaded_multi_sgd_mom_update": ["momentum", "rescale_grad", "clip_gradient",
                                       "num_weights"],
    "multi_sum_sq": ["num_arrays"],
    "multi_lars": ["eta", "eps", "rescale_grad"],
    "_adamw_update": ["lr", "beta1", "beta2", "epsilon", "wd", "eta", "clip_gradient"],
}
MXNET_PARAMS["_mp_adamw_update"] = MXNET_PARAMS["_adamw_update"]
MXNET_PARAMS["_multi_adamw_update"] = MXNET_PARAMS["_multi_mp_adamw_update"] = [
    "lrs", "beta1", "beta2", "epsilon", "wds", "etas", "clip_gradient", "num_weights"]
MXNET_PARAMS["_multi_lamb_update"] = MXNET_PARAMS["_multi_mp_lamb_update"] = [
    "learning_rates", "beta1", "beta2", "epsilon", "wds", "rescale_grad", "lower_bound",
    "upper_bound", "clip_gradient", "bias_correction", "step_count", "num_tensors"]
MXNET_PARAMS["mp_lamb_update_phase1"] = MXNET_PARAMS["lamb_update_phase1"]
MXNET_PARAMS["mp_lamb_update_phase2"] = MXNET_PARAMS["lamb_update_phase2"]
MXNET_PARAMS["multi_mp_sgd_update"] = MXNET_PARAMS["multi_sgd_update"]
MXNET_PARAMS["multi_mp_sgd_mom_update"] = MXNET_PARAMS["multi_sgd_mom_update"]
MXNET_PARAMS["preloaded_multi_sgd_update"] = MXNET_PARAMS["preloaded_multi_sgd_mom_update"][1:]
MXNET_PARAMS["preloaded_multi_mp_sgd_update"] = MXNET_PARAMS["preloaded_multi_sgd_update"]
MXNET_PARAMS["preloaded_multi_mp_sgd_mom_update"] = \
    MXNET_PARAMS["preloaded_multi_sgd_mom_update"]


@pytest.mark.parametrize("name", sorted(MXNET_PARAMS))
def test_registration_follows_mxnet(name):
    op = registry.get(name)
    assert list(op.params) == MXNET_PARAMS[name]
    assert not op.differentiable
    if name in fused.SPECS:
        assert op.mutated_inputs({}) == fused.SPECS[name].mutate


def test_multi_input_names_and_mutated_inputs():
    op = registry.get("preloaded_multi_mp_sgd_mom_update")
    params = op.parse_params({"num_weights": 2})
    assert op.input_names(params) == ["weight_0", "grad_0", "mom_0", "weight32_0", "weight_1",
                                      "grad_1", "mom_1", "weight32_1", "lrs", "wds"]
    assert op.mutated_inputs(params) == (2, 3, 6, 7)
    assert op.output_names(params) == ["output0", "output1"]


def test_partial_inference_fills_master_dtypes_and_norm_shapes():
    assert infer_types("mp_sgd_mom_update", {"lr": 0.1}, ["float16", None, None, None]) == (
        ["float16", "float16", "float32", "float32"], ["float16"])
    assert infer_shapes("mp_lamb_update_phase2", {"lr": 0.1}, [(3, 4), None, None, None, None]) \
        == ([(3, 4), (3, 4), (1,), (1,), (3, 4)], [(3, 4)])
    params = {"lrs": (0.1, 0.2), "wds": (0.0, 0.0), "num_weights": 2}
    ins, outs = infer_shapes("multi_sgd_update", params, [(2, 0), None, None, (5,)], [(0, 3), None])
    assert ins == [(2, 3), (2, 3), (5,), (5,)] and outs == [(2, 3), (5,)]


BAD = [
    ("multi_sgd_update", 4, dict(lrs=(0.1, 0.1), wds=(0.0, 0.0)), ValueError,
     r"multi_sgd_update: takes 2 input\(s\) \(weight_0, grad_0\), got 4"),
    ("multi_sgd_update", 4, dict(lrs=(0.1,), wds=(0.0, 0.0), num_weights=2), ValueError,
     r"multi_sgd_update: argument 'lrs' has 1 value\(s\); num_weights is 2"),
    ("multi_mp_sgd_update", 3, dict(lrs=(0.1,), wds=(0.0,), num_weights=1, dtypes="half"),
     TypeInferenceError, r"argument 'weight32_0' has dtype float16; expected float32"),
    ("mp_sgd_update", 3, dict(lr=0.1, dtypes="half"), TypeInferenceError,
     r"mp_sgd_update: argument 'weight32' has dtype float16; expected float32"),
    ("mp_lamb_update_phase1", 5, dict(t=1, wd=0.0), TypeInferenceError,
     r"mp_lamb_update_phase1: argument 'weight' has dtype float32; supported: float16"),
    ("nag_mom_update", 3, dict(lr=0.1, shapes=[(3,), (3,), (4,)]), ShapeError,
     r"nag_mom_update: argument 'mom' has shape \(4,\), which differs from 'weight' \(3,\)"),
    ("lamb_update_phase2", 4, dict(lr=0.1, shapes=[(3,), (3,), (2,), (1,)]), ShapeError,
     r"lamb_update_phase2: argument 'r1' has shape \(2,\)"),
    ("preloaded_multi_sgd_update", 4, dict(num_weights=1, shapes=[(3,), (3,), (2,), (1,)]),
     ShapeError, r"argument 'lrs' has shape \(2,\); expected \(1,\) for num_weights=1"),
    ("multi_sgd_update", 4, dict(lrs=(0.1, 0.1), wds=(0.0, 0.0), num_weights=2,
                                 shapes=[(3,), (3,), (3,), (2,)]), ShapeError,
     r"argument 'grad_1' has shape \(2,\), which differs from 'weight_1' \(3,\)"),
    ("multi_lars", 4, dict(eta=1.0, eps=0.0, dtypes="half"), TypeInferenceError,
     r"multi_lars: argument 'lrs' has dtype float16; MultiLARS only supports float32"),
    ("ftml_update", 5, dict(lr=0.1), ValueError, r"ftml_update: argument 't' is required"),
    ("_multi_lamb_update", 8, dict(learning_rates=(0.1, 0.1), wds=(0.0, 0.0), step_count=(1,),
                                   num_tensors=2), ValueError,
     r"_multi_lamb_update: argument 'step_count' has 1 value\(s\); num_tensors is 2"),
    ("_multi_mp_adamw_update", 6, dict(lrs=(0.1,), wds=(0.0,), etas=(1.0,), dtypes="half"),
     TypeInferenceError, r"argument 'mean_0' has dtype float16; expected float32"),
    ("_multi_adamw_update", 4, dict(lrs=(0.1,), wds=(0.0,), etas=(1.0,)), ValueError,
     r"_multi_adamw_update: takes 5 input\(s\)"),
]


@pytest.mark.parametrize("name, nin, kw, err, match", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs_raise_clear_errors(name, nin, kw, err, match):
    kw = dict(kw)
    shapes = kw.pop("shapes", [(3,)] * nin)
    dtype = np.float16 if kw.pop("dtypes", None) == "half" else np.float32
    xs = [np.ones(s, dtype) for s in shapes]
    with pytest.raises(err, match=match):
        invoke(name, xs, **kw)


# --- the aggregated AdamW and LAMB -------------------------------------------------------------
from mx_ops.ops.optimizer import multi_adam  # noqa: E402


def numpy_multi_adam(spec, groups, params, rescale):
    """multi_adam_cpu.h's formulas in float64: (new groups, new weights)."""
    n = len(groups)
    b1, b2 = params.get("beta1", 0.9), params.get("beta2", 0.999)
    eps = params.get("epsilon", 1e-6 if spec.lamb else 1e-8)
    lrs, wds, third = (params[k] for k in spec.rates)
    new_groups, outs = [], []
    for k in range(n):
        grp = [x.astype(np.float64) for x in groups[k]]
        mp = spec.mp and groups[k][0].dtype != np.float32
        w = grp[4] if mp else grp[0]
        g = _clip(rescale * grp[1], params.get("clip_gradient", -1.0))
        grp[2] = b1 * grp[2] + (1 - b1) * g
        grp[3] = b2 * grp[3] + (1 - b2) * g * g
        if spec.lamb:
            m, v = grp[2], grp[3]
            if params.get("bias_correction", True):
                m, v = m / (1 - b1 ** third[k]), v / (1 - b2 ** third[k])
            step = m / (np.sqrt(v) + eps) + wds[k] * w
            r1, r2 = np.sqrt(np.sum(w * w)), np.sqrt(np.sum(step * step))
            if params.get("lower_bound", -1.0) >= 0:
                r1 = max(r1, params["lower_bound"])
            if params.get("upper_bound", -1.0) >= 0:
                r1 = min(r1, params["upper_bound"])
            new = w - (lrs[k] if r1 == 0 or r2 == 0 else lrs[k] * r1 / r2) * step
        else:
            new = w - third[k] * (lrs[k] * grp[2] / (np.sqrt(grp[3]) + eps) + wds[k] * w)
        if mp:
            grp[4] = new
        grp[0] = new
        new_groups.append(grp)
        outs.append(new)
    return new_groups, outs


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(multi_adam.SPECS)), n=st.integers(1, 3),
       shapes=st.lists(st.lists(st.integers(0, 4), max_size=3).map(tuple), min_size=3,
                       max_size=3),
       dtype=st.sampled_from(["float16", "float32", "float64"]), seed=st.integers(0, 2 ** 16),
       bounds=st.booleans())
def test_multi_adam_updates_match_numpy(name, n, shapes, dtype, seed, bounds):
    spec = multi_adam.SPECS[name]
    rng = np.random.default_rng(seed)
    groups = []
    for k in range(n):
        grp = [np.asarray(rng.standard_normal(shapes[k])) for _ in spec.per_weight]
        grp[3] = np.asarray(np.abs(grp[3]) + 0.5)               # var
        grp = [x.astype("float32" if spec.fp32(j) else dtype) for j, x in enumerate(grp)]
        if spec.mp:
            grp[4] = grp[0].astype(np.float32)
        groups.append(grp)
    # rates float32 holds exactly, as MXNet's float parameters are float32
    params = {spec.count: n, "beta1": 0.75, "beta2": 0.875, "epsilon": 0.0625,
              "clip_gradient": 1.5}
    params.update(dict(zip(spec.rates, (tuple(0.125 * (k + 1) for k in range(n)),
                                        tuple(0.0625 * k for k in range(n)),
                                        tuple(range(1, n + 1)) if spec.lamb else
                                        tuple(0.5 * (k + 1) for k in range(n))))))
    if spec.lamb and bounds:
        params.update(lower_bound=1.0, upper_bound=2.0, bias_correction=False)
    flat = [x for grp in groups for x in grp]
    rescale = 0.5
    if spec.lamb:
        params["rescale_grad"] = rescale
    else:
        flat.append(np.array([rescale], "float32" if spec.mp else dtype))
    want_groups, want = numpy_multi_adam(spec, groups, params, rescale)
    weights = [grp[0] for grp in groups]
    got = invoke(name, flat, out=weights if n > 1 else weights[0], **params)
    got = got if isinstance(got, (list, tuple)) else [got]
    mp = spec.mp and dtype != "float32"
    tol = {"float16": 4e-3, "float32": 2e-5,
           "float64": 2e-5 if mp or spec.lamb else 1e-12}[dtype]
    for k in range(n):
        np.testing.assert_allclose(got[k].astype(np.float64), want[k], rtol=tol, atol=tol)
        for j, (x, w) in enumerate(zip(groups[k], want_groups[k])):
            np.testing.assert_allclose(x.astype(np.float64), w, rtol=tol, atol=tol,
                                       err_msg=f"{spec.per_weight[j]}_{k}")
