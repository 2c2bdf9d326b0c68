"""LeakyReLU with act_type='rrelu' (MXNet 1.x's leaky_relu-inl.h): in
training a slope per element from the RANDOM resource's Philox stream,
uniform on [lower_bound, upper_bound), kept in the hidden mask; in inference
the mean slope.  The slopes against mx_storage's stream, their bounds and
determinism per seed (whatever the worker count), the output, every req,
the backward through the mask against NumPy and finite differences, the
gradient maker's inputs, the NDArray call's visible output, and errors."""
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
from mx_ops.core.gradient import grad_entries
from mx_ops.core.node import make_node, variable
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest

DTYPES = ["float16", "float32", "float64"]
LOWER, UPPER = 0.125, 0.334                 # MXNet's defaults
RR = dict(act_type="rrelu")


def _stream():
    """The CPU resource rrelu reserves from (MXNet's kRandom)."""
    return resource.request(cpu(0), ResourceRequest.RANDOM)


def expected_slopes(seed, offset, shape, dtype, lower=LOWER, upper=UPPER):
    """Philox's float32 uniforms on [lower, upper), stored in ``dtype``
    (lower everywhere when the bounds are equal in float32)."""
    n = int(np.prod(shape))
    if np.float32(lower) == np.float32(upper):
        return np.full(shape, np.float32(lower)).astype(dtype)
    u = _philox.uniform(seed, offset, n, lower, upper, dtype="float32")
    return u.reshape(shape).astype(dtype)


def _leaky(x, slopes):
    """x > 0 ? x : slope * x in the compute type (float32 for float16)."""
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    xa = x.astype(acc)
    return np.where(xa > 0, xa, slopes.astype(acc) * xa).astype(x.dtype)


def _data(shape, dtype, seed=0):
    # Away from 0, so that no element sits on the kink.
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    x[np.abs(x) < 0.05] += 0.2
    return x.astype(dtype)


def _train(x, **kw):
    """(output, mask, (seed, offset) the call drew from) in training."""
    r = _stream()
    state = (r.seed, r.offset)
    with training.train_mode():
        out, mask = invoke("LeakyReLU", [x], **RR, **kw)
    return out, mask, state


# --- forward --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_training_slopes_are_the_philox_stream(dtype):
    resource.seed(42)
    x = _data((7, 33, 5), dtype)
    out, mask, (seed, offset) = _train(x)
    want = expected_slopes(seed, offset, x.shape, dtype)
    np.testing.assert_array_equal(mask, want)
    np.testing.assert_array_equal(out, _leaky(x, want))
    assert _stream().offset == offset + x.size       # one counter value per element
    # positives pass through; negatives are scaled by their own slope
    pos = x > 0
    np.testing.assert_array_equal(out[pos], x[pos])
    assert 0 < pos.sum() < x.size


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower, upper", [(LOWER, UPPER), (0.2, 0.7), (-0.5, 0.5),
                                          (0.3, 0.3)])
def test_training_slopes_lie_within_the_bounds(dtype, lower, upper):
    x = -np.ones(20000, dtype)
    out, mask, (seed, offset) = _train(x, lower_bound=lower, upper_bound=upper)
    np.testing.assert_array_equal(mask, expected_slopes(seed, offset, x.shape, dtype,
                                                        lower, upper))
    # The float32 draws lie in [lower, upper); stored in float16 they may
    # round onto a bound, never past it.
    lo, hi = np.float32(lower), np.float32(upper)
    m32 = mask.astype(np.float32)
    if dtype == "float16":
        assert m32.min() >= np.float16(lo) and m32.max() <= np.float16(hi)
    elif lower == upper:
        np.testing.assert_array_equal(m32, lo)
    else:
        assert m32.min() >= lo and m32.max() < hi
    np.testing.assert_array_equal(out, _leaky(x, mask))


def test_training_slopes_are_uniform():
    x = -np.ones(1 << 20, np.float32)
    _, mask, _ = _train(x, lower_bound=0.1, upper_bound=0.5)
    n = x.size
    # mean (l+u)/2, variance (u-l)^2/12, and an even spread over 8 bins
    assert abs(mask.mean() - 0.3) < 5 * 0.4 / np.sqrt(12 * n)
    assert abs(mask.var() - 0.4 ** 2 / 12) < 1e-3
    counts, _ = np.histogram(mask, bins=8, range=(0.1, 0.5))
    assert np.all(np.abs(counts - n / 8) < 5 * np.sqrt(n / 8))


def test_seeded_runs_repeat_and_seeds_differ():
    x = -np.ones((64, 64), np.float32)
    resource.seed(7)
    a = [_train(x)[1] for _ in range(2)]
    resource.seed(7)
    b = [_train(x)[1] for _ in range(2)]
    resource.seed(8)
    c = _train(x)[1]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1]) and not np.array_equal(a[0], c)


_SCRIPT = r"""
import hashlib
import numpy as np
import mx_ndarray as nd
from mx_ops.core import training
from mx_storage import resource
resource.seed(2024)
x = nd.array(-np.ones((300, 1000), np.float32))
with training.train_mode():
    outs = [nd.LeakyReLU(x, act_type="rrelu")[0] for _ in range(4)]
print(hashlib.sha256(b"".join(o.asnumpy().tobytes() for o in outs)).hexdigest())
"""


def test_slopes_do_not_depend_on_thread_or_worker_counts():
    digests = set()
    for omp, workers in (("1", "1"), ("2", "1"), ("2", "3")):
        env = dict(os.environ, OMP_NUM_THREADS=omp, MXNET_CPU_WORKER_NTHREADS=workers)
        res = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        digests.add(res.stdout.strip().splitlines()[-1])
    assert len(digests) == 1, json.dumps(sorted(digests))


@pytest.mark.parametrize("dtype", DTYPES)
def test_inference_uses_the_mean_slope_and_draws_nothing(nn, dtype):
    x = _data((2, 3, 4), dtype, 1)
    mean = (LOWER + UPPER) / 2
    want = np.where(x.astype(np.float64) > 0, x, mean * x.astype(np.float64))
    before = _stream().offset
    with training.predict_mode():
        nn.check_reqs("LeakyReLU", [x], [want, np.full(x.shape, mean)], RR, dtype)
        out, mask = invoke("LeakyReLU", [x], **RR)
    assert _stream().offset == before
    # the output is what the mean-slope leaky kernel gives, bit for bit
    np.testing.assert_array_equal(
        out, invoke("LeakyReLU", [x], act_type="leaky", slope=mean))
    np.testing.assert_array_equal(mask, np.full(x.shape, mean, dtype))


@pytest.mark.parametrize("act", ["leaky", "elu", "selu"])
def test_only_rrelu_draws(act):
    x = _data((5, 6), "float32", 2)
    before = _stream().offset
    with training.train_mode():
        y = invoke("LeakyReLU", [x], act_type=act)
    assert isinstance(y, np.ndarray)                   # one output, no mask
    assert _stream().offset == before


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_every_req(dtype):
    x = _data((6, 7), dtype, 3)
    rng = np.random.default_rng(5)
    for reqs in (["write", "write"], ["add", "null"], ["null", "add"], ["add", "add"],
                 ["write", "null"], ["null", "write"], ["null", "null"]):
        out0 = rng.standard_normal(x.shape).astype(dtype)
        mask0 = rng.standard_normal(x.shape).astype(dtype)
        out, mask = out0.copy(), mask0.copy()
        r = _stream()
        seed, offset = r.seed, r.offset
        with training.train_mode():
            invoke("LeakyReLU", [x], out=[out, mask], req=reqs, **RR)
        assert r.offset == offset + x.size
        m = expected_slopes(seed, offset, x.shape, dtype)
        for got, base, val, req in ((out, out0, _leaky(x, m), reqs[0]),
                                    (mask, mask0, m, reqs[1])):
            want = {"write": val, "null": base,
                    "add": (base.astype(np.float32) + val.astype(np.float32)).astype(dtype)}
            tol = 2e-3 if dtype == "float16" else 1e-6
            np.testing.assert_allclose(got.astype(np.float64), want[req].astype(np.float64),
                                       rtol=tol, atol=tol, err_msg=str(reqs))


def test_forward_in_place():
    x = _data((32, 32), "float32", 4)
    y = x.copy()
    mask = np.empty_like(x)
    r = _stream()
    seed, offset = r.seed, r.offset
    with training.train_mode():
        invoke("LeakyReLU", [y], out=[y, mask], req=["inplace", "write"], **RR)
    m = expected_slopes(seed, offset, x.shape, "float32")
    np.testing.assert_array_equal(mask, m)
    np.testing.assert_array_equal(y, _leaky(x, m))


# --- backward -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_through_the_mask_every_req(nn, dtype):
    x = _data((3, 4, 5), dtype, 6)
    og = np.random.default_rng(7).standard_normal(x.shape).astype(dtype)
    y, mask, _ = _train(x)
    want = og.astype(np.float64) * np.where(y.astype(np.float64) > 0, 1.0,
                                            mask.astype(np.float64))
    nn.check_reqs("_backward_LeakyReLU", [og, mask, y], [want], RR, dtype)
    inplace = og.copy()
    invoke("_backward_LeakyReLU", [inplace, mask, y], out=inplace, req="inplace", **RR)
    np.testing.assert_allclose(inplace.astype(np.float64), want, rtol=nn.TOL[dtype],
                               atol=nn.TOL[dtype])


def test_finite_differences_with_the_mask_held_fixed(nn):
    x = _data((4, 6), "float64", 8)
    og = np.random.default_rng(9).standard_normal(x.shape)

    def f(v):
        resource.seed(11)       # the same slopes at every evaluation
        with training.train_mode():
            return invoke("LeakyReLU", [v], **RR)[0]

    num = nn.numeric_grad(f, x, og)
    resource.seed(11)
    with training.train_mode():
        got = symbolic_gradient("LeakyReLU", [x], [og, np.zeros(x.shape)], **RR)[0]
    np.testing.assert_allclose(got, num, rtol=1e-7, atol=1e-9)
    # the slopes of the negatives are the drawn ones, not their mean
    resource.seed(11)
    mask = _train(x)[1]
    neg = x < 0
    np.testing.assert_allclose(got[neg], (og * mask)[neg], rtol=1e-12)
    assert len(np.unique(mask[neg])) == neg.sum()


def test_finite_differences_in_inference():
    x = _data((3, 5), "float64", 10)
    with training.predict_mode():
        check_numeric_gradient("LeakyReLU", [x], rtol=1e-6, atol=1e-8, **RR)


def test_gradient_maker_reads_out_grad_mask_and_output():
    """MXNet's DeclareBackwardDependency for rrelu: (out_grad, mask, output)."""
    data = variable("data")
    node = make_node("LeakyReLU", [data.outputs()[0]], **RR)
    og = variable("og").outputs()[0]
    (grad,) = grad_entries(node, [og, variable("og_mask").outputs()[0]])
    back = grad.node
    assert back.op.name == "_backward_LeakyReLU"
    assert back.inputs == [og, node.outputs()[1], node.outputs()[0]]


# --- errors ---------------------------------------------------------------------
def test_bad_inputs_raise_clear_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ParamError, match=r"LeakyReLU: arguments 'lower_bound' 0.5 and "
                                         r"'upper_bound' 0.25 must be finite"):
        invoke("LeakyReLU", [x], act_type="rrelu", lower_bound=0.5, upper_bound=0.25)
    with pytest.raises(ParamError, match="LeakyReLU: arguments 'lower_bound'"):
        invoke("LeakyReLU", [x], act_type="rrelu", upper_bound=1e40)
    # the bounds matter to rrelu only
    invoke("LeakyReLU", [x], act_type="leaky", lower_bound=0.5, upper_bound=0.25)
    with pytest.raises(TypeInferenceError, match="LeakyReLU: argument 'data' has dtype int32"):
        invoke("LeakyReLU", [x.astype(np.int32)], **RR)
    with pytest.raises(ValueError, match=r"_backward_LeakyReLU: takes 3 input\(s\) "
                                         r"\(out_grad, mask, out_data\)"):
        invoke("_backward_LeakyReLU", [x, x], **RR)
    with pytest.raises(ShapeError, match=r"_backward_LeakyReLU: argument 'mask' has shape "
                                         r"\(3, 5\), which differs from 'out_grad' \(3, 4\)"):
        invoke("_backward_LeakyReLU", [x, np.ones((3, 5), np.float32), x], **RR)
    with pytest.raises(TypeInferenceError, match="_backward_LeakyReLU: argument 'mask' has "
                                                 "dtype float64, which differs from 'out_grad'"):
        invoke("_backward_LeakyReLU", [x, x.astype(np.float64), x], **RR)
