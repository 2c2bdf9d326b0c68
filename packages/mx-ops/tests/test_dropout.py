"""Dropout and _backward_Dropout: the mask is Philox's stream of the call's
reserved (seed, offset), deterministic per seed and independent of the
thread and worker counts; mask statistics, axes, modes, every req, the
gradient against finite differences, and errors."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from mx_engine import cpu
from mx_ops import invoke
from mx_ops.core import training
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest

DTYPES = ["float16", "float32", "float64"]


def _stream():
    """The CPU resource Dropout reserves from (one copy on the CPU)."""
    return resource.request(cpu(0), ResourceRequest.PARALLEL_RANDOM)


def expected_mask(seed, offset, shape, p, dtype):
    """MXNet's mask from Philox's float32 uniforms: 1/(1-p) where u < 1-p."""
    pkeep = np.float32(1) - np.float32(p)
    u = _philox.uniform(seed, offset, int(np.prod(shape)), dtype="float32").reshape(shape)
    keep = np.float32(1) / pkeep if pkeep > 0 else np.float32(0)
    return np.where(u < pkeep, keep, np.float32(0)).astype(dtype)


def _product(x, mask):
    """data * mask in the compute type (float32 for float16), as the kernel."""
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    return (x.astype(acc) * mask.astype(acc)).astype(x.dtype)


def _run(x, train=True, **kw):
    """(output, mask, (seed, offset) the call drew from)."""
    r = _stream()
    state = (r.seed, r.offset)
    with training.train_mode() if train else training.predict_mode():
        out, mask = invoke("Dropout", [x], **kw)
    return out, mask, state


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.5, 0.1, 0.9])
def test_training_mask_is_the_philox_stream(dtype, p):
    resource.seed(42)
    x = np.random.default_rng(0).standard_normal((7, 33, 5)).astype(dtype)
    out, mask, (seed, offset) = _run(x, p=p)
    want = expected_mask(seed, offset, x.shape, p, dtype)
    np.testing.assert_array_equal(mask, want)
    np.testing.assert_array_equal(out, _product(x, want))
    assert _stream().offset == offset + x.size       # one counter value per element


def test_seeded_runs_repeat_and_seeds_differ():
    x = np.ones((64, 64), np.float32)
    resource.seed(7)
    a = [_run(x)[1] for _ in range(2)]
    resource.seed(7)
    b = [_run(x)[1] for _ in range(2)]
    resource.seed(8)
    c = _run(x)[1]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1]) and not np.array_equal(a[0], c)


def test_mask_statistics():
    x = np.ones(1 << 20, np.float32)
    for p in (0.2, 0.5, 0.75):
        out, mask, _ = _run(x, p=p)
        kept = mask != 0
        n, q = x.size, 1 - p
        assert abs(kept.mean() - q) < 5 * np.sqrt(q * (1 - q) / n)
        pkeep = np.float32(1) - np.float32(p)            # MXNet's 1.0f - p
        np.testing.assert_array_equal(np.unique(mask[kept]), [np.float32(1) / pkeep])
        np.testing.assert_array_equal(out, mask)
        # E[out] = E[x]: inverted dropout keeps the expectation.
        assert abs(out.mean() - 1) < 5 * np.sqrt(p / q / n)


def test_p_one_gives_zeros_without_nan_and_p_zero_is_identity():
    x = np.random.default_rng(1).standard_normal((50, 40)).astype(np.float32)
    out, mask, _ = _run(x, p=1.0)
    assert not np.isnan(out).any() and not np.isnan(mask).any()
    np.testing.assert_array_equal(out, 0)
    np.testing.assert_array_equal(mask, 0)
    before = _stream().offset
    out, mask, _ = _run(x, p=0.0)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, 1)
    assert _stream().offset == before        # p = 0 draws nothing (MXNet's pass-through)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inference_is_identity_with_a_mask_of_ones(dtype):
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(dtype)
    before = _stream().offset
    out, mask, _ = _run(x, train=False, p=0.5)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, np.ones_like(x))
    assert _stream().offset == before        # no draws in inference
    # mode='always' drops in inference too.
    out, mask, (seed, offset) = _run(x, train=False, p=0.5, mode="always")
    np.testing.assert_array_equal(mask, expected_mask(seed, offset, x.shape, 0.5, dtype))


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (-1,), (2, 0, 1)])
def test_axes_share_one_draw(axes):
    x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float64)
    out, mask, (seed, offset) = _run(x, p=0.4, axes=axes)
    shape = [3, 4, 5]
    for a in axes:
        shape[a] = 1
    assert mask.shape == tuple(shape)
    want = expected_mask(seed, offset, mask.shape, 0.4, "float64")
    np.testing.assert_array_equal(mask, want)
    np.testing.assert_array_equal(out, x * want)


@pytest.mark.parametrize("axes", [(), (1,)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_every_req(dtype, axes):
    x = np.random.default_rng(4).standard_normal((6, 7)).astype(dtype)
    rng = np.random.default_rng(5)
    mshape = (6, 1) if axes else (6, 7)
    for reqs in (["write", "write"], ["add", "null"], ["null", "add"], ["add", "add"],
                 ["write", "null"], ["null", "write"]):
        out0 = rng.standard_normal(x.shape).astype(dtype)
        mask0 = rng.standard_normal(mshape).astype(dtype)
        out, mask = out0.copy(), mask0.copy()
        r = _stream()
        seed, offset = r.seed, r.offset
        with training.train_mode():
            invoke("Dropout", [x], out=[out, mask], req=reqs, p=0.3, axes=axes)
        m = expected_mask(seed, offset, mshape, 0.3, dtype)
        y = _product(x, np.broadcast_to(m, x.shape))
        for got, base, val, req in ((out, out0, y, reqs[0]), (mask, mask0, m, reqs[1])):
            want = {"write": val, "null": base,
                    "add": (base.astype(np.float32) + val.astype(np.float32)).astype(dtype)}[req]
            tol = 2e-3 if dtype == "float16" else 1e-6
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=tol, atol=tol, err_msg=str(reqs))


def test_forward_in_place():
    x = np.random.default_rng(6).standard_normal((32, 32)).astype(np.float32)
    y = x.copy()
    mask = np.empty_like(x)
    r = _stream()
    seed, offset = r.seed, r.offset
    with training.train_mode():
        invoke("Dropout", [y], out=[y, mask], req=["inplace", "write"])
    np.testing.assert_array_equal(y, x * expected_mask(seed, offset, x.shape, 0.5, "float32"))
    z = x.copy()
    invoke("Dropout", [z], out=[z, mask], req=["inplace", "write"])     # inference: as is
    np.testing.assert_array_equal(z, x)


@pytest.mark.parametrize("axes", [(), (0,), (1, 2)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_every_req(nn, dtype, axes):
    rng = np.random.default_rng(7)
    og = rng.standard_normal((3, 4, 5)).astype(dtype)
    _, mask, _ = _run(og, p=0.5, axes=axes)
    want = og.astype(np.float64) * mask.astype(np.float64)
    nn.check_reqs("_backward_Dropout", [og, mask], [want], dict(p=0.5, axes=axes), dtype)
    inplace = og.copy()
    invoke("_backward_Dropout", [inplace, mask], out=inplace, req="inplace", axes=axes)
    np.testing.assert_allclose(inplace.astype(np.float64), want, rtol=nn.TOL[dtype])


@pytest.mark.parametrize("axes", [(), (1,)])
def test_gradient_against_finite_differences(nn, axes):
    from mx_ops.test_utils import symbolic_gradient
    x = np.random.default_rng(8).standard_normal((4, 6))
    og = np.random.default_rng(9).standard_normal((4, 6))
    kw = dict(p=0.5, mode="always", axes=axes)

    def f(v):
        resource.seed(11)       # the same mask at every evaluation
        return invoke("Dropout", [v], **kw)[0]

    num = nn.numeric_grad(f, x, og)
    resource.seed(11)
    mask_shape = (4, 1) if axes else (4, 6)
    got = symbolic_gradient("Dropout", [x], [og, np.zeros(mask_shape)], **kw)[0]
    np.testing.assert_allclose(got, num, rtol=1e-7, atol=1e-9)
    assert np.count_nonzero(got) not in (0, got.size)


_SCRIPT = r"""
import hashlib, sys
import numpy as np
import mx_ndarray as nd
from mx_ops.core import training
from mx_storage import resource
resource.seed(2024)
x = nd.array(np.ones((300, 1000), np.float32))
with training.train_mode():
    outs = [nd.Dropout(x, p=0.3) for _ in range(4)]
print(hashlib.sha256(b"".join(o.asnumpy().tobytes() for o in outs)).hexdigest())
"""


def test_masks_do_not_depend_on_thread_or_worker_counts():
    digests = set()
    for omp, workers in (("1", "1"), ("2", "1"), ("2", "3")):
        env = dict(os.environ, OMP_NUM_THREADS=omp, MXNET_CPU_WORKER_NTHREADS=workers)
        res = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        digests.add(res.stdout.strip().splitlines()[-1])
    assert len(digests) == 1, json.dumps(sorted(digests))


def test_bad_inputs_raise_clear_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ParamError, match=r"Dropout: argument 'p' must be in \[0.0, 1.0\]"):
        invoke("Dropout", [x], p=1.5)
    with pytest.raises(ParamError, match="Dropout: argument 'mode' must be one of"):
        invoke("Dropout", [x], mode="sometimes")
    with pytest.raises(ShapeError, match=r"Dropout: argument 'axes' holds 2, out of range for "
                                         r"'data' of shape \(3, 4\)"):
        invoke("Dropout", [x], axes=(2,))
    with pytest.raises(TypeInferenceError, match="Dropout: argument 'data' has dtype int32"):
        invoke("Dropout", [x.astype(np.int32)])
    with pytest.raises(ShapeError, match=r"_backward_Dropout: argument 'mask' has shape "
                                         r"\(3, 4\); for 'out_grad' of shape \(3, 4\) and axes "
                                         r"\(0,\) it must be \(1, 4\)"):
        invoke("_backward_Dropout", [x, x], axes=(0,))
    with pytest.raises(TypeInferenceError, match="_backward_Dropout: argument 'mask' has dtype "
                                                 "float64, which differs from 'out_grad'"):
        invoke("_backward_Dropout", [x, x.astype(np.float64)])
