"""GPU twins of LayerNorm, GroupNorm, InstanceNorm, moments, BatchNorm_v1
and their backward against the CPU kernels: the same invoke on NumPy and on CuPy
arrays, for every float dtype the operator takes, several layouts and
every req.  gpu-marked: skipped without CuPy and a CUDA device."""
import numpy as np
import pytest

from mx_ops import invoke, registry

TOL = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-11}


def _close(got, want, dtype, scale=1.0):
    import cupy
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64),
                               np.asarray(want).astype(np.float64),
                               rtol=TOL[dtype], atol=TOL[dtype] * scale)


def _check(op, inputs, back_inputs_of, params, dtype):
    """Forward, then the backward under several req mixes, GPU against CPU."""
    import cupy
    want = invoke(op, inputs, **params)
    got = invoke(op, [cupy.asarray(a) for a in inputs], **params)
    for g, w in zip(got, want):
        _close(g, w, dtype, scale=max(1.0, float(np.abs(w.astype(np.float64)).max())))
    back = back_inputs_of(want)
    want_g = invoke(f"_backward_{op}", back, **params)
    want_g = want_g if isinstance(want_g, list) else [want_g]
    base = [np.random.default_rng(2).standard_normal(w.shape).astype(w.dtype) for w in want_g]
    mixes = ([["write"], ["add"]] if len(want_g) == 1 else
             [["write"] * 3, ["add", "null", "add"], ["null", "add", "write"]])
    for reqs in mixes:
        cpu_out = [b.copy() for b in base]
        gpu_out = [cupy.asarray(b) for b in base]
        invoke(f"_backward_{op}", back, out=cpu_out, req=reqs, **params)
        invoke(f"_backward_{op}", [cupy.asarray(a) for a in back], out=gpu_out, req=reqs,
               **params)
        for g, w in zip(gpu_out, cpu_out):
            _close(g, w, dtype, scale=max(1.0, float(np.abs(w.astype(np.float64)).max())))


NORM_CASES = [("LayerNorm", (6, 7), {}), ("LayerNorm", (3, 5, 4), {"axis": 1}),
              ("LayerNorm", (64, 1024), {}), ("GroupNorm", (2, 6, 5), {"num_groups": 3}),
              ("GroupNorm", (4, 8, 9, 9), {"num_groups": 2}), ("InstanceNorm", (2, 3, 5), {}),
              ("InstanceNorm", (4, 6, 300), {})]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op, shape, params", NORM_CASES)
def test_gpu_row_norm_matches_cpu(op, shape, params, dtype):
    if op == "InstanceNorm" and dtype != "float32":
        pytest.skip("InstanceNorm takes float32 only, as MXNet's")
    rng = np.random.default_rng(0)
    k = {"LayerNorm": shape[params.get("axis", -1)], "GroupNorm": params.get("num_groups"),
         "InstanceNorm": shape[1]}[op]
    x = (rng.standard_normal(shape) + 1).astype(dtype)
    gamma, beta = rng.uniform(0.5, 1.5, k).astype(dtype), rng.standard_normal(k).astype(dtype)
    og = rng.standard_normal(shape).astype(dtype)
    _check(op, [x, gamma, beta], lambda want: [og, x, gamma, want[1], want[2]], params, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape, axes, keepdims", [((3, 4, 5), (1,), False),
                                                   ((3, 4, 5), (0, 2), True),
                                                   ((8, 300), (0,), False),
                                                   ((2, 3, 4), (0, 1, 2), False)])
def test_gpu_moments_matches_cpu(shape, axes, keepdims, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) + 2).astype(dtype)
    params = {"axes": axes, "keepdims": keepdims}
    gm = gv = None

    def back(want):
        nonlocal gm, gv
        gm = rng.standard_normal(want[0].shape).astype(dtype)
        gv = rng.standard_normal(want[0].shape).astype(dtype)
        return [gm, gv, x, want[0]]
    _check("moments", [x], back, params, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (7, 5)])
def test_gpu_batch_norm_v1_matches_cpu(shape, train):
    import cupy
    from mx_ops.core import training
    rng = np.random.default_rng(3)
    c = shape[1]
    x = rng.standard_normal(shape).astype(np.float32)
    vec = [rng.uniform(0.5, 1.5, c).astype(np.float32) for _ in range(4)]
    kw = {"fix_gamma": False, "momentum": 0.7}
    gvec = [cupy.asarray(v) for v in vec]
    with training.train_mode() if train else training.predict_mode():
        want = invoke("BatchNorm_v1", [x, *vec], **kw)
        got = invoke("BatchNorm_v1", [cupy.asarray(x), *gvec], **kw)
    for g, w in zip(got, want):
        _close(g, w, "float32", scale=10)
    og = rng.standard_normal(shape).astype(np.float32)
    with training.train_mode():                 # moves the moving statistics
        want = invoke("_backward_BatchNorm_v1", [og, want[1], want[2], x, *vec], **kw)
        got = invoke("_backward_BatchNorm_v1", [cupy.asarray(og), got[1], got[2],
                                                cupy.asarray(x), *gvec], **kw)
    for g, w in zip(got + gvec, want + vec):
        _close(g, w, "float32", scale=10)


def test_gpu_computes_registered_where_cupy_is():
    import importlib.util
    have = importlib.util.find_spec("cupy") is not None
    for name in ("BatchNorm_v1", "_backward_BatchNorm_v1", "LayerNorm", "GroupNorm",
                 "InstanceNorm", "moments", "_backward_LayerNorm", "_backward_GroupNorm",
                 "_backward_InstanceNorm", "_backward_moments", "hard_sigmoid",
                 "_backward_hard_sigmoid", "_backward_SVMOutput"):
        assert ("gpu" in registry.get(name).compute) == have, name
