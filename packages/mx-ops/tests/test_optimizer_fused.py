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


def run_case(name):
    """Our operator over the case's steps, as make_optimizer_reference.py
    runs MXNet's: (inputs after, outputs of the last call)."""
    case = CASES[name]
    xs = inputs(name)
    weights = [i for i, (role, _, _) in enumerate(case["inputs"]) if role == "weight"]
    nout = case.get("num_outputs", 1)
    ys = None
    for step in range(case["steps"]):
        if step:
            fresh = inputs(name, step)
            for i in gradient_positions(name):
                xs[i] = fresh[i]
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
