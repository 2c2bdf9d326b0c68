"""The distribution samplers of samplers.h through mx_ops.invoke: the stream
definition (against mx_storage's Philox blocks), independence of the thread
count, dtypes, per-element parameters, _sample_multinomial and its gradient.
The distributions themselves are chi-square tested in
tests/test_random_distributions.py (through mx.nd.random)."""
import numpy as np
import pytest

from mx_engine import cpu
from mx_ops import invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import TypeInferenceError
from mx_ops.ops.nn import _conv_cpu
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest

RNG_SAMPLE = 4     # counter word 2 of samplers.h's blocks (tag 4 in mx_storage/_philox.pxd)


def _state():
    r = resource.request(cpu(0), ResourceRequest.PARALLEL_RANDOM)
    return r.seed, r.offset


def _uniform53(seed, c, block=0):
    w = _philox.philox_block((c & 0xffffffff, c >> 32, RNG_SAMPLE, block),
                             (seed & 0xffffffff, seed >> 32))
    return ((w[0] << 21) | (w[1] >> 11)) * 2.0 ** -53


def test_gamma_is_element_i_of_the_philox_stream():
    # alpha = 1: Marsaglia-Tsang's first normal (Box-Muller on block 0's four
    # words) and the uniform of block 1's first two words, when accepted.
    resource.seed(77)
    seed, offset = _state()
    got = invoke("_random_gamma", [], alpha=1.0, beta=2.0, shape=(50,), dtype="float64")
    d = 1.0 - 1.0 / 3.0
    ref = []
    for i in range(50):
        c = offset + i
        w = _philox.philox_block((c & 0xffffffff, c >> 32, RNG_SAMPLE, 0),
                                 (seed & 0xffffffff, seed >> 32))
        u1 = 1.0 - _uniform53(seed, c)
        u2 = ((w[2] << 21) | (w[3] >> 11)) * 2.0 ** -53
        x = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
        v = (1 + x / np.sqrt(9 * d)) ** 3
        u = 1.0 - _uniform53(seed, offset + i, 1)
        ok = v > 0 and (u < 1 - 0.0331 * x ** 4 or np.log(u) < 0.5 * x * x + d * (1 - v + np.log(v)))
        ref.append(2.0 * d * v if ok else np.nan)
    known = ~np.isnan(ref)
    assert known.sum() > 40
    np.testing.assert_allclose(got[known], np.array(ref)[known], rtol=1e-12)


def test_small_poisson_is_the_inverse_cdf_of_the_first_word():
    # lam < 10: the first k whose CDF (summed term by term, p_k = p_k-1 lam / k)
    # passes the 32-bit uniform of word 0 of block 0; the same from the CPU's
    # table (_random_poisson) and from the search (_sample_poisson).
    lam = 4.0
    p, cdf = np.exp(-lam), [np.exp(-lam)]
    for k in range(1, 40):
        p = p * lam / k
        cdf.append(cdf[-1] + p)
    resource.seed(78)
    for op, inputs, params in [("_random_poisson", [], {"lam": lam, "shape": (3000,)}),
                               ("_sample_poisson", [np.full(2, lam)], {"shape": (1500,)})]:
        seed, offset = _state()
        got = invoke(op, inputs, dtype="float64", **params).ravel()
        words = np.array([_philox.philox_block(((offset + i) & 0xffffffff, (offset + i) >> 32,
                                                RNG_SAMPLE, 0),
                                               (seed & 0xffffffff, seed >> 32))[0]
                          for i in range(3000)], np.float64)
        ref = np.searchsorted(np.array(cdf), (words + 0.5) * 2.0 ** -32, side="right")
        assert np.array_equal(got, ref), op


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dist, op, params, value", [
    ("uniform", "_random_uniform", {"low": -2.0, "high": 5.0}, lambda z: -2.0 + 7.0 * z),
    ("normal", "_random_normal", {"loc": 1.5, "scale": 0.5}, lambda z: 1.5 + 0.5 * z),
    ("exponential", "_random_exponential", {"lam": 2.0}, lambda z: z / 2.0),
])
def test_direct_layout_is_the_philox_stream(direct_variates, dist, op, params, value, dtype):
    """uniform/normal/exponential: 4 (float32, float16) or 2 (float64)
    elements per Philox block (samplers.h), the same through _sample_*."""
    tol = {"float16": 1e-3, "float32": 2e-6, "float64": 1e-14}[dtype]
    resource.seed(77)
    seed, offset = _state()
    got = invoke(op, [], shape=(1031,), dtype=dtype, **params)   # > one 1024-element chunk
    ref = value(direct_variates(seed, offset, 1031, dist, dtype))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    # _sample_<dist>: element i takes the parameters of row i // 3
    seed, offset = _state()
    rows = [np.array([v, v * 2 + 1.0]) for v in params.values()]
    got = invoke(f"_sample_{dist}", rows, shape=(3,), dtype=dtype)
    z = direct_variates(seed, offset, 6, dist, dtype)
    p = [np.repeat(r, 3) for r in rows]
    ref = {"uniform": lambda: p[0] + (p[1] - p[0]) * z, "normal": lambda: p[0] + p[1] * z,
           "exponential": lambda: z / p[0]}[dist]()
    np.testing.assert_allclose(got.ravel(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("op, inputs, params", [
    ("_random_gamma", [], {"alpha": 0.7, "beta": 2.0, "shape": (300000,)}),
    ("_random_poisson", [], {"lam": 25.0, "shape": (300000,)}),
    ("_random_generalized_negative_binomial", [], {"mu": 3.0, "alpha": 0.4,
                                                  "shape": (300000,)}),
    ("_sample_negative_binomial", [np.array([2.0, 5.0]), np.array([0.3, 0.8])],
     {"shape": (150000,)}),
    ("_sample_multinomial", [np.full((3, 4), 0.25)], {"shape": (100000,), "get_prob": True}),
])
def test_draws_do_not_depend_on_the_thread_count(op, inputs, params):
    runs = []
    for threads in (1, 2, 3):
        old = _conv_cpu.set_max_threads(threads)
        try:
            resource.seed(5)
            out = invoke(op, inputs, **params)
        finally:
            _conv_cpu.set_max_threads(old)
        runs.append(out if isinstance(out, list) else [out])
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_float_dtype_rounds_the_same_draws(dtype):
    resource.seed(3)
    ref = invoke("_random_gamma", [], alpha=3.0, shape=(1000,), dtype="float64")
    resource.seed(3)
    got = invoke("_random_gamma", [], alpha=3.0, shape=(1000,), dtype=dtype)
    assert got.dtype == dtype
    assert np.array_equal(got, ref.astype(dtype))
    # per-element parameters of any float dtype, output dtype float32 by default
    params = np.array([1.0, 2.0], dtype)
    out = invoke("_sample_gamma", [params, params], shape=(2,))
    assert out.dtype == np.float32 and out.shape == (2, 2)


def test_sample_rows_follow_their_parameters_and_invalid_ones_give_nan():
    resource.seed(8)
    loc, scale = np.array([0.0, 100.0, 5.0]), np.array([1.0, 0.5, -1.0])
    out = invoke("_sample_normal", [loc, scale], shape=(20000,), dtype="float64")
    assert abs(out[0].mean()) < 0.05 and abs(out[1].mean() - 100) < 0.05
    assert abs(out[1].std() - 0.5) < 0.02 and np.isnan(out[2]).all()
    lam = np.array([[0.0, 3.0], [-1.0, 1e6]])
    out = invoke("_sample_poisson", [lam], shape=(1000,), dtype="float64")
    assert (out[0, 0] == 0).all() and np.isnan(out[1, 0]).all()
    assert out[0, 1].min() >= 0 and (out[0, 1] == np.round(out[0, 1])).all()
    assert abs(out[1, 1].mean() - 1e6) < 200
    # p = 1: no failures; alpha = 0: Poisson
    assert (invoke("_random_negative_binomial", [], k=3, p=1.0, shape=(100,)) == 0).all()
    gnb = invoke("_random_generalized_negative_binomial", [], mu=4.0, alpha=0.0,
                 shape=(100000,), dtype="float64")
    assert abs(gnb.mean() - 4) < 0.05 and abs(gnb.var() - 4) < 0.1


def test_like_ops_take_the_data_shape_and_dtype():
    data = np.zeros((3, 4), np.float64)
    resource.seed(4)
    a = invoke("_random_poisson_like", [data], lam=7.0)
    resource.seed(4)
    b = invoke("_random_poisson_like", [np.ones((3, 4), np.float64)], lam=7.0)
    assert a.shape == (3, 4) and a.dtype == np.float64 and np.array_equal(a, b)
    u = invoke("_random_uniform_like", [np.zeros(10000, np.float16)], low=-1.0, high=2.0)
    assert u.dtype == np.float16 and u.min() >= -1 and u.max() <= 2
    with pytest.raises(TypeInferenceError, match="_random_gamma_like: argument 'data'"):
        invoke("_random_gamma_like", [np.zeros(3, np.int32)])


@pytest.mark.parametrize("k", [3, 50])      # counted branch-free / binary search
def test_multinomial_is_the_inverse_cdf_of_the_float64_uniforms(direct_variates, k):
    # sample i of row i // per: the first running sum of the row that passes
    # uniform i of the float64 direct layout
    p = np.random.default_rng(k).dirichlet(np.ones(k), size=3)
    p[1, ::2] = 0.0
    p[1] /= p[1].sum()
    resource.seed(12)
    seed, offset = _state()
    got = invoke("_sample_multinomial", [p], shape=(700,))       # > one 1024-element chunk
    u = direct_variates(seed, offset, 2100, "uniform", "float64").reshape(3, 700)
    ref = [np.searchsorted(np.cumsum(p[r]), u[r], side="right") for r in range(3)]
    assert np.array_equal(got, np.minimum(ref, k - 1))
    assert not (got[1] % 2 == 0).any()


def test_multinomial_samples_log_probabilities_and_gradient():
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]], np.float64)
    resource.seed(9)
    idx, logp = invoke("_sample_multinomial", [p], shape=(4000,), get_prob=True)
    assert idx.dtype == np.int32 and idx.shape == logp.shape == (2, 4000)
    assert logp.dtype == np.float64
    np.testing.assert_array_equal(logp, np.log(np.take_along_axis(p, idx, 1)))
    assert not (idx[1] == 1).any()
    np.testing.assert_allclose(np.bincount(idx[0], minlength=3) / 4000, p[0], atol=0.03)
    # d/dp sum_s og[s] * log p[idx[s]] = sum over samples of og / p[idx]
    og = np.random.default_rng(0).normal(size=idx.shape)
    ref = np.zeros_like(p)
    for r in range(2):
        np.add.at(ref[r], idx[r], og[r] / p[r, idx[r]])
    grad = invoke("_backward_sample_multinomial", [og, p, idx], shape=(4000,),
                  get_prob=True)
    np.testing.assert_allclose(grad, ref, rtol=1e-12)
    acc = np.ones_like(p)
    invoke("_backward_sample_multinomial", [og, p, idx], shape=(4000,), get_prob=True,
           out=acc, req="add")
    np.testing.assert_allclose(acc, ref + 1, rtol=1e-12)
    one = invoke("_sample_multinomial", [np.array([0.0, 1.0], np.float32)], dtype="uint8")
    assert one.shape == (1,) and one.dtype == np.uint8 and one[0] == 1


def test_errors_name_the_operator_and_argument():
    with pytest.raises(ParamError, match="_random_gamma: argument 'alpha' must be positive"):
        invoke("_random_gamma", [], alpha=0.0, shape=(2,))
    with pytest.raises(ParamError, match="_random_poisson: argument 'lam' must be non-neg"):
        invoke("_random_poisson", [], lam=-1.0, shape=(2,))
    with pytest.raises(ParamError, match=r"_random_negative_binomial: argument 'p' must be in"):
        invoke("_random_negative_binomial", [], k=2, p=1.5, shape=(2,))
    with pytest.raises(ParamError, match="_random_exponential_like: argument 'lam'"):
        invoke("_random_exponential_like", [np.zeros(2, np.float32)], lam=-2.0)
    with pytest.raises(ValueError, match="_sample_gamma: argument 'beta' has shape"):
        invoke("_sample_gamma", [np.ones(2), np.ones(3)])
    with pytest.raises(TypeInferenceError, match="_sample_uniform: argument 'high' has dtype"):
        invoke("_sample_uniform", [np.zeros(2), np.ones(2, np.float32)])
    with pytest.raises(ParamError, match="dtype"):
        invoke("_sample_multinomial", [np.array([0.5, 0.5])], dtype="int64")
    with pytest.raises(Exception, match="req 'add' is not supported"):
        invoke("_random_gamma", [], shape=(2,), out=np.zeros(2, np.float32), req="add")


_GPU_CASES = [
    ("_random_gamma", lambda xp: [], {"alpha": 0.6, "beta": 2.0, "shape": (5000,)}),
    ("_random_poisson", lambda xp: [], {"lam": 40.0, "shape": (5000,), "dtype": "float64"}),
    ("_random_negative_binomial_like", lambda xp: [xp.zeros(5000, "float16")],
     {"k": 3, "p": 0.3}),
    ("_sample_generalized_negative_binomial",
     lambda xp: [xp.asarray([1.0, 9.0]), xp.asarray([0.5, 0.0])], {"shape": (2000,)}),
    ("_sample_multinomial", lambda xp: [xp.asarray([[0.2, 0.8], [0.6, 0.4]], "float32")],
     {"shape": (3000,), "get_prob": True}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("op, inputs, params", _GPU_CASES)
def test_gpu_twin_draws_the_cpu_values(op, inputs, params, monkeypatch):
    """samplers.h on both devices: the same (seed, offset) gives the same
    values up to libm's last bits (a rejection decision may rarely flip).
    Devices draw unrelated streams of one global seed (resource's
    _device_seed), so here every device and copy is given the seed itself."""
    import cupy
    monkeypatch.setattr(resource, "_device_seed", lambda seed, ctx, kind, index: seed)
    resource.seed(21)
    cpu_out = invoke(op, inputs(np), **params)
    resource.seed(21)
    cpu_out = cpu_out if isinstance(cpu_out, list) else [cpu_out]
    # mx_ops.invoke runs where its arrays live: CuPy outputs put the
    # samplers without inputs on the GPU.
    outs = [cupy.empty(c.shape, c.dtype) for c in cpu_out]
    gpu_out = invoke(op, inputs(cupy), out=outs[0] if len(outs) == 1 else outs, **params)
    gpu_out = gpu_out if isinstance(gpu_out, list) else [gpu_out]
    for c, g in zip(cpu_out, gpu_out):
        g = cupy.asnumpy(g)
        assert g.dtype == c.dtype and g.shape == c.shape
        close = np.isclose(g.astype(np.float64), c.astype(np.float64), rtol=1e-3, atol=1e-6)
        assert close.mean() > 0.999
