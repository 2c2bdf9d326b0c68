"""BatchNorm_v1 and _backward_BatchNorm_v1 against MXNet 1.9.1's outputs,
gradients and moving statistics (tests/data/norm_mxnet191.npz: training
and inference, fix_gamma, 2-D and 4-D data), every req, inference (partial
too) and errors."""
from pathlib import Path

import numpy as np
import pytest

from mx_ops import get, infer_shapes, infer_types, invoke
from mx_ops.core import training
from mx_ops.core.registry import ShapeError, TypeInferenceError

DATA = np.load(Path(__file__).parent / "data" / "norm_mxnet191.npz")
KEYS = sorted({k.rsplit(".", 1)[0] for k in DATA.files if k.startswith("bnv1.")})
KW = dict(eps=1e-3, momentum=0.8, output_mean_var=True)


@pytest.mark.parametrize("key", KEYS)
def test_against_mxnet(key):
    c = {f.rsplit(".", 1)[1]: DATA[f] for f in DATA.files if f.rsplit(".", 1)[0] == key}
    _, _, fix_gamma, mode = key.split(".")
    kw = dict(KW, fix_gamma=fix_gamma == "True")
    mm, mv = c["moving_mean"].copy(), c["moving_var"].copy()
    gamma = c["gamma"].copy()
    with training.train_mode() if mode == "train" else training.predict_mode():
        y, mean, var = invoke("BatchNorm_v1", [c["x"], gamma, c["beta"], mm, mv], **kw)
        for got, name in ((y, "out"), (mean, "mean"), (var, "var")):
            np.testing.assert_allclose(got, c[name], rtol=1e-5, atol=1e-5, err_msg=name)
        # The forward leaves the moving statistics (and gamma) alone.
        np.testing.assert_array_equal(mm, c["mm_fwd"])
        np.testing.assert_array_equal(mv, c["mv_fwd"])
        np.testing.assert_array_equal(gamma, c["gamma"])
    # MXNet's executor runs every backward in training mode, so after an
    # inference forward it reads the saved (moving) statistics as a batch's.
    with training.train_mode():
        grads = invoke("_backward_BatchNorm_v1", [c["og"], mean, var, c["x"], gamma, c["beta"],
                                                  mm, mv], **kw)
    for got, name in zip(grads, ("dx", "dgamma", "dbeta")):
        np.testing.assert_allclose(got, c[name], rtol=1e-4, atol=1e-5, err_msg=name)
    # ... and the training backward moves them.
    np.testing.assert_allclose(mm, c["mm_bwd"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mv, c["mv_bwd"], rtol=1e-6, atol=1e-7)


def test_reqs(nn):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    vec = [rng.uniform(0.5, 1.5, 3).astype(np.float32) for _ in range(4)]
    with training.train_mode():
        want = invoke("BatchNorm_v1", [x, *vec], fix_gamma=False)
        nn.check_reqs("BatchNorm_v1", [x, *vec], want, {"fix_gamma": False}, "float32")
    with training.predict_mode():
        og = rng.standard_normal(x.shape).astype(np.float32)
        back = [og, want[1], want[2], x, *vec]
        grads = invoke("_backward_BatchNorm_v1", back, fix_gamma=False)
        nn.check_reqs("_backward_BatchNorm_v1", back, grads, {"fix_gamma": False}, "float32")


def test_inference_and_errors():
    op = get("BatchNorm_v1")
    p = op.parse_params({})
    assert op.aux_states == ("moving_mean", "moving_var")
    assert op.outputs == ("output", "mean", "var")
    assert infer_shapes(op, p, [(4, 3, 2, 2)] + [None] * 4) == (
        [(4, 3, 2, 2)] + [(3,)] * 4, [(4, 3, 2, 2), (3,), (3,)])
    assert infer_shapes(op, p, [(0, 5)] + [None] * 4)[0][1] == (5,)
    assert infer_types(op, p, [None, "float32", None, None, None])[0] == ["float32"] * 5
    with pytest.raises(ShapeError, match="2-D"):
        infer_shapes(op, p, [(2, 3, 4)] + [None] * 4)
    with pytest.raises(TypeInferenceError, match="float32 only"):
        infer_types(op, p, ["float64"] * 5)
    assert set(op.params) == {"eps", "momentum", "fix_gamma", "use_global_stats",
                              "output_mean_var"}
