"""Every optimizer against MXNet 1.9.1: the same weights and gradients
stepped through ``mx.optimizer.get_updater`` give the weights and states
MXNet's gave (tests/data/optimizer, written by make_optimizer_reference.py).
Settings: wd, rescale_grad, clip_gradient, lr_scheduler, float16 with
multi_precision, lr/wd multipliers (by name, by index, from symbol
attributes), aggregated (list) updates on and off."""
import json
import pathlib

import numpy as np
import pytest

import mx

DATA = pathlib.Path(__file__).resolve().parent / "data" / "optimizer"
REFERENCE = json.loads((DATA / "optimizer_cases.json").read_text())
ARRAYS = np.load(DATA / "optimizer_reference.npz")
CASES = REFERENCE["cases"]
NAMES = REFERENCE["names"]


def case_id(case):
    extra = [case.get("dtype", ""), "" if case.get("aggregate", True) else "noagg",
             "sched" if "scheduler" in case else "", "sym" if "sym" in case else "",
             "mult" if "lr_mult" in case else ""]
    return "-".join([case["name"]] + [e for e in extra if e])


def build(case):
    kwargs = dict(case["kwargs"])
    if "scheduler" in case:
        spec = case["scheduler"]
        kwargs["lr_scheduler"] = getattr(mx.lr_scheduler, spec["class"])(**spec["params"])
    if case.get("idx2name") or "sym" in case:
        kwargs["param_idx2name"] = dict(enumerate(NAMES))
    if "sym" in case:
        attrs = case["sym"]
        kwargs["sym"] = mx.sym.Group([
            mx.sym.Variable(n, attr={f"__{k}__": v for k, v in attrs.get(n, {}).items()})
            for n in NAMES])
    opt = mx.optimizer.create(case["name"], **kwargs)
    if "lr_mult" in case:
        opt.set_lr_mult(dict(case["lr_mult"]))
    if "wd_mult" in case:
        opt.set_wd_mult(dict(case["wd_mult"]))
    if not case.get("aggregate", True):
        opt.aggregate_num = 0
    return opt


def run_steps(case, opt):
    dtype = case.get("dtype", "float32")
    n = len(NAMES)
    updater = mx.optimizer.get_updater(opt)
    weights = [mx.nd.array(ARRAYS[f"input/weight{j}"], dtype=dtype) for j in range(n)]
    for step in range(REFERENCE["steps"]):
        grads = [mx.nd.array(ARRAYS[f"input/grad{step}_{j}"], dtype=dtype) for j in range(n)]
        if case.get("aggregate", True):
            updater(list(range(n)), grads, weights)
        else:
            for j in range(n):
                updater(j, grads[j], weights[j])
    return updater, weights


def tolerance(case):
    return dict(rtol=2e-3, atol=2e-3) if case.get("dtype") == "float16" else \
        dict(rtol=1e-5, atol=1e-6)


def compare_state(got, want, tol, where):
    if want is None:
        assert got is None, where
    elif isinstance(want, str):
        assert isinstance(got, mx.nd.NDArray), where
        np.testing.assert_allclose(got.asnumpy(), ARRAYS[want], err_msg=where, **tol)
        assert got.dtype == ARRAYS[want].dtype, where
    else:
        assert isinstance(got, (tuple, list)) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            compare_state(g, w, tol, f"{where}[{i}]")


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case_id(c) for c in CASES])
def test_matches_mxnet(index):
    case = CASES[index]
    opt = build(case)
    updater, weights = run_steps(case, opt)
    tol = tolerance(case)
    for j, w in enumerate(weights):
        want = ARRAYS[f"case{index}/weight{j}"]
        assert w.dtype == want.dtype
        np.testing.assert_allclose(w.asnumpy(), want, err_msg=f"weight {j}", **tol)
    for j, want in case["states"].items():
        compare_state(updater.states[int(j)], want, tol, f"state {j}")
    assert sorted(opt.lr_mult.items(), key=str) == [tuple(p) for p in case["lr_mult_final"]]
    assert sorted(opt.wd_mult.items(), key=str) == [tuple(p) for p in case["wd_mult_final"]]


def test_every_mxnet_optimizer_is_registered():
    want = {"sgd", "signum", "ftml", "lars", "lbsgd", "dcasgd", "nag", "sgld", "ccsgd", "adam",
            "adagrad", "rmsprop", "adadelta", "ftrl", "adamax", "nadam", "lamb", "test"}
    assert want <= set(mx.optimizer.Optimizer.opt_registry)
    assert {c["name"].lower() for c in CASES} >= want - {"sgld", "ccsgd"}
