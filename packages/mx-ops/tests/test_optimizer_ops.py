"""sgd_update, sgd_mom_update, adam_update, rmsprop_update and ftrl_update
against a NumPy reimplementation of MXNet's formulas (optimizer_op-inl.h)
over several steps, in place (out=weight) and with every req, and errors."""
import numpy as np
import pytest

from mx_ops import invoke, registry
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError

DTYPES = ["float16", "float32", "float64"]
STATES = {"sgd_update": (), "sgd_mom_update": ("mom",), "adam_update": ("mean", "var"),
          "rmsprop_update": ("n",), "ftrl_update": ("z", "n")}
DEFAULTS = {"wd": 0.0, "rescale_grad": 1.0, "clip_gradient": -1.0, "momentum": 0.0,
            "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "gamma1": 0.95,
            "clip_weights": -1.0, "lamda1": 0.01, "beta": 1.0}
PARAMS = {  # name -> list of parameter sets
    "sgd_update": [dict(lr=0.1), dict(lr=0.05, wd=0.01, rescale_grad=0.5, clip_gradient=0.3)],
    "sgd_mom_update": [dict(lr=0.1, momentum=0.9),
                       dict(lr=0.02, momentum=0.5, wd=0.1, rescale_grad=2.0,
                            clip_gradient=0.5)],
    "adam_update": [dict(lr=0.01),
                    dict(lr=0.1, beta1=0.8, beta2=0.99, epsilon=1e-6, wd=0.05,
                         rescale_grad=0.25, clip_gradient=0.2)],
    "rmsprop_update": [dict(lr=0.01),
                       dict(lr=0.05, gamma1=0.9, epsilon=1e-6, wd=0.01, rescale_grad=3.0,
                            clip_gradient=1.0, clip_weights=0.9)],
    "ftrl_update": [dict(lr=0.1), dict(lr=0.3, lamda1=0.05, beta=0.5, wd=0.02,
                                       rescale_grad=0.5, clip_gradient=0.4)],
}
CASES = [(name, i) for name, sets in PARAMS.items() for i in range(len(sets))]


def reference_step(name, w, g, states, params):
    """MXNet's kernel for one step, in the compute type (float32 for
    float16) with the states stored back in the weight's dtype; returns the
    new weight and updates ``states`` in place."""
    t = w.dtype
    acc = np.float32 if t == np.float16 else t.type
    p = {k: acc(np.float32(v)) for k, v in dict(DEFAULTS, **params).items()}
    lr, wd, rs, clip = p["lr"], p["wd"], p["rescale_grad"], p["clip_gradient"]
    clipping = params.get("clip_gradient", -1.0) >= 0
    w, g = w.astype(acc), g.astype(acc)
    one = acc(1)

    def c(v, bound):
        return np.minimum(np.maximum(v, -bound), bound)

    def put(k, v):
        states[k][...] = v.astype(t)
        return states[k].astype(acc)

    if name == "sgd_update":
        step = lr * c(rs * g, clip) if clipping else (lr * rs) * g
        return ((one - lr * wd) * w - step).astype(t)
    if name == "sgd_mom_update":
        gr = lr * c(rs * g, clip) if clipping else lr * rs * g
        mom = put(0, p["momentum"] * states[0].astype(acc) - lr * wd * w - gr)
        return (w + mom).astype(t)
    if name == "adam_update":
        gr = g * rs + w * wd
        gr = c(gr, clip) if clipping else gr
        b1, b2 = p["beta1"], p["beta2"]
        mean = put(0, b1 * states[0].astype(acc) + (one - b1) * gr)
        var = put(1, b2 * states[1].astype(acc) + (one - b2) * gr * gr)
        return (w - lr * mean / (np.sqrt(var) + p["epsilon"])).astype(t)
    if name == "rmsprop_update":
        gr = rs * g + wd * w
        gr = c(gr, clip) if clipping else gr
        g1 = p["gamma1"]
        n = put(0, (one - g1) * (gr * gr) + g1 * states[0].astype(acc))
        nw = w - lr * (gr / np.sqrt(n + p["epsilon"]))
        if params.get("clip_weights", -1.0) >= 0:
            nw = c(nw, p["clip_weights"])
        return nw.astype(t)
    gr = g * rs                                     # ftrl
    gr = c(gr, clip) if clipping else gr
    n = states[1].astype(acc)
    z = put(0, states[0].astype(acc) + (gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr))
    n = put(1, n + gr * gr)
    l1 = p["lamda1"]
    gt = (np.abs(z) > l1).astype(acc)
    return ((np.sign(z) * l1 - z) / ((p["beta"] + np.sqrt(n)) / lr + wd) * gt).astype(t)


def _start(name, dtype, seed=0, shape=(7, 9)):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(dtype)
    states = [rng.uniform(0.0, 0.5, shape).astype(dtype) for _ in STATES[name]]
    return w, states


TOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, pset", CASES)
def test_several_steps_in_place_match_numpy(name, pset, dtype):
    params = PARAMS[name][pset]
    w, states = _start(name, dtype)
    ref_w, ref_states = w.copy(), [s.copy() for s in states]
    rng = np.random.default_rng(1)
    for step in range(6):
        g = (rng.standard_normal(w.shape) * 2).astype(dtype)
        ref_w = reference_step(name, ref_w, g, ref_states, params)
        got = invoke(name, [w, g, *states], out=w, **params)     # the weight in place
        assert got is w
        tol = TOL[dtype]
        np.testing.assert_allclose(w.astype(np.float64), ref_w.astype(np.float64), rtol=tol,
                                   atol=tol, err_msg=f"weight after step {step}")
        for s, r, label in zip(states, ref_states, STATES[name]):
            np.testing.assert_allclose(s.astype(np.float64), r.astype(np.float64), rtol=tol,
                                       atol=tol, err_msg=f"{label} after step {step}")


@pytest.mark.parametrize("name", list(PARAMS))
def test_new_output_leaves_the_weight_and_every_req(name):
    params = PARAMS[name][1]
    w, states = _start(name, "float64", seed=2)
    g = np.random.default_rng(3).standard_normal(w.shape)
    w0 = w.copy()
    ref_states = [s.copy() for s in states]
    want = reference_step(name, w, g, ref_states, params)
    out = invoke(name, [w, g, *[s.copy() for s in states]], **params)
    np.testing.assert_allclose(out, want, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(w, w0)
    base = np.random.default_rng(4).standard_normal(w.shape)
    for req, expect in (("add", base + want), ("null", base), ("write", want)):
        buf, st = base.copy(), [s.copy() for s in states]
        invoke(name, [w, g, *st], out=buf, req=req, **params)
        np.testing.assert_allclose(buf, expect, rtol=1e-14, atol=1e-14, err_msg=req)
        # The states are updated whatever the req, as MXNet's kernels do.
        for s, r in zip(st, ref_states):
            np.testing.assert_allclose(s, r, rtol=1e-14, atol=1e-14, err_msg=req)


def test_adam_does_not_correct_bias():
    w, (mean, var) = np.zeros(4), (np.zeros(4), np.zeros(4))
    g = np.array([1.0, -2.0, 0.5, 4.0])
    out = invoke("adam_update", [w, g, mean, var], lr=0.1)
    b1, b2 = float(np.float32(0.9)), float(np.float32(0.999))
    lr, eps = float(np.float32(0.1)), float(np.float32(1e-8))
    m, v = (1 - b1) * g, (1 - b2) * g * g
    np.testing.assert_allclose(out, -lr * m / (np.sqrt(v) + eps), rtol=1e-12)
    np.testing.assert_allclose(mean, m, rtol=1e-12)
    np.testing.assert_allclose(var, v, rtol=1e-12)
    # A bias-corrected first step is -lr * sign(g); this one is (1 - b1) / sqrt(1 - b2)
    # ~ 3.16 times that.
    np.testing.assert_allclose(out, -lr * np.sign(g) * (1 - b1) / np.sqrt(1 - b2), rtol=1e-6)


def test_large_arrays_split_across_threads():
    w, (mom,) = _start("sgd_mom_update", "float32", seed=5, shape=(1 << 20,))
    g = np.random.default_rng(6).standard_normal(w.shape).astype(np.float32)
    ref_mom = [mom.copy()]
    want = reference_step("sgd_mom_update", w, g, ref_mom, dict(lr=0.1, momentum=0.9))
    invoke("sgd_mom_update", [w, g, mom], out=w, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(w, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mom, ref_mom[0], rtol=1e-6, atol=1e-7)


def test_registration_follows_mxnet():
    for name, states in STATES.items():
        op = registry.get(name)
        params = op.parse_params({"lr": 0.1})
        assert op.input_names(params) == ["weight", "grad", *states]
        assert op.mutated_inputs(params) == tuple(range(2, 2 + len(states)))
        assert op.inplace == ((0, 0),) and not op.differentiable
        assert list(params)[0] == "lr"
    assert registry.get("adam_update").parse_params({"lr": 1})["lazy_update"] is True
    assert "clip_weights" in registry.get("rmsprop_update").params
    assert set(registry.get("ftrl_update").params) == {"lr", "lamda1", "beta", "wd",
                                                       "rescale_grad", "clip_gradient"}


def test_bad_inputs_raise_clear_errors():
    w, g, m = np.ones((3, 4)), np.ones((3, 4)), np.zeros((3, 4))
    with pytest.raises(ParamError, match="sgd_update: argument 'lr' is required"):
        invoke("sgd_update", [w, g])
    with pytest.raises(ShapeError, match=r"sgd_mom_update: argument 'mom' has shape \(4, 3\), "
                                         r"which differs from 'weight' \(3, 4\)"):
        invoke("sgd_mom_update", [w, g, np.zeros((4, 3))], lr=0.1)
    with pytest.raises(ShapeError, match=r"adam_update: argument 'grad' has shape \(12,\)"):
        invoke("adam_update", [w, g.reshape(-1), m, m.copy()], lr=0.1)
    with pytest.raises(TypeInferenceError, match="ftrl_update: argument 'n' has dtype float32, "
                                                 "which differs from 'weight' float64"):
        invoke("ftrl_update", [w, g, m, m.astype(np.float32)], lr=0.1)
    with pytest.raises(TypeInferenceError, match="sgd_update: argument 'weight' has dtype "
                                                 "int32; supported"):
        invoke("sgd_update", [w.astype(np.int32), g.astype(np.int32)], lr=0.1)
    with pytest.raises(ValueError, match="rmsprop_update: argument 'n' is written in place"):
        invoke("rmsprop_update", [w, g, m.tolist()], lr=0.1)
    with pytest.raises(ParamError, match="sgd_update: unknown argument 'momentum'"):
        invoke("sgd_update", [w, g], lr=0.1, momentum=0.9)
