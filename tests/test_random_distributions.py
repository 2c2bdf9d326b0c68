"""mx.random / mx.nd.random / mx.sym.random: every distribution chi-square
tested against SciPy's (mx.test_utils.verify_generator), moments against
the formulas, per-element parameters, seeding (also across engine worker
and OpenMP thread counts), MXNet 1.9.1's shapes, dtypes and error types
(tests/data/mxnet_random_reference.json), mx.sym.random in a bound executor
and the gradient of multinomial's log probabilities."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import mx
from mx.test_utils import gen_buckets_probs_with_ppf, verify_generator

REFERENCE = json.loads((Path(__file__).parent / "data" / "mxnet_random_reference.json")
                       .read_text())
NSAMPLES = 200000


def _continuous(dist):
    return gen_buckets_probs_with_ppf(dist.ppf, 10)


def _discrete(dist, nbuckets=10):
    """Buckets (lo, hi) of half-integers cut at the distribution's deciles,
    the two ends open, and their exact probabilities."""
    cuts = sorted({int(dist.ppf(q)) for q in np.linspace(0, 1, nbuckets + 1)[1:-1]})
    edges = [-np.inf] + [c + 0.5 for c in cuts] + [np.inf]
    buckets = list(zip(edges[:-1], edges[1:]))
    return buckets, [dist.cdf(hi) - dist.cdf(lo) for lo, hi in buckets]


# name -> (mx.nd.random call with scalar parameters, SciPy's distribution, discrete)
CASES = {
    "uniform": (lambda **k: mx.nd.random.uniform(-2, 3, **k), stats.uniform(-2, 5), False),
    "normal": (lambda **k: mx.nd.random.normal(1, 2, **k), stats.norm(1, 2), False),
    "randn": (lambda shape, **k: mx.nd.random.randn(shape, loc=-1, scale=0.5, **k),
              stats.norm(-1, 0.5), False),
    "exponential": (lambda **k: mx.nd.random.exponential(2.0, **k), stats.expon(scale=2),
                    False),
    "gamma_small_alpha": (lambda **k: mx.nd.random.gamma(0.4, 2.0, **k),
                          stats.gamma(0.4, scale=2.0), False),
    "gamma": (lambda **k: mx.nd.random.gamma(3.5, 0.5, **k), stats.gamma(3.5, scale=0.5),
              False),
    "poisson_small": (lambda **k: mx.nd.random.poisson(3.0, **k), stats.poisson(3.0), True),
    "poisson_large": (lambda **k: mx.nd.random.poisson(57.5, **k), stats.poisson(57.5), True),
    "negative_binomial": (lambda **k: mx.nd.random.negative_binomial(3, 0.4, **k),
                          stats.nbinom(3, 0.4), True),
    "generalized_negative_binomial": (
        lambda **k: mx.nd.random.generalized_negative_binomial(2.0, 0.5, **k),
        stats.nbinom(1 / 0.5, 1 / (1 + 0.5 * 2.0)), True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_chi_square_of_every_distribution(name, dtype):
    mx.random.seed(1000 + len(name))
    draw, dist, discrete = CASES[name]
    buckets, probs = _discrete(dist) if discrete else _continuous(dist)
    verify_generator(lambda n: draw(shape=n, dtype=dtype).asnumpy(), buckets, probs,
                     nsamples=NSAMPLES, nrepeat=3)
    x = draw(shape=NSAMPLES, dtype=dtype).asnumpy().astype(np.float64)
    assert mx.test_utils.mean_check(lambda n: x, dist.mean(), dist.std(), NSAMPLES)
    assert mx.test_utils.var_check(lambda n: x, dist.std(), NSAMPLES)


# _sample_ forms: (call with NDArray parameters, SciPy distribution of row i, discrete)
PER_ELEMENT = {
    "uniform": (lambda a, b, **k: mx.nd.random.uniform(a, b, **k), [(-1.0, 0.0), (2.0, 7.0)],
                lambda a, b: stats.uniform(a, b - a), False),
    "normal": (lambda a, b, **k: mx.nd.random.normal(a, b, **k), [(0.0, 1.0), (10.0, 0.1)],
               lambda a, b: stats.norm(a, b), False),
    "exponential": (lambda a, **k: mx.nd.random.exponential(a, **k), [(0.5,), (3.0,)],
                    lambda s: stats.expon(scale=s), False),
    "gamma": (lambda a, b, **k: mx.nd.random.gamma(a, b, **k), [(0.3, 1.0), (9.0, 2.0)],
              lambda a, b: stats.gamma(a, scale=b), False),
    "poisson": (lambda a, **k: mx.nd.random.poisson(a, **k), [(0.7,), (120.0,)],
                lambda lam: stats.poisson(lam), True),
    "negative_binomial": (lambda a, b, **k: mx.nd.random.negative_binomial(a, b, **k),
                          [(1.0, 0.2), (7.0, 0.9)], lambda k, p: stats.nbinom(k, p), True),
    "generalized_negative_binomial": (
        lambda a, b, **k: mx.nd.random.generalized_negative_binomial(a, b, **k),
        [(5.0, 0.25), (1.5, 2.0)], lambda mu, al: stats.nbinom(1 / al, 1 / (1 + al * mu)),
        True),
}


@pytest.mark.parametrize("name", sorted(PER_ELEMENT))
def test_chi_square_of_per_element_parameters(name):
    """Row i of the output follows the distribution of parameter element i."""
    draw, rows, dist_of, discrete = PER_ELEMENT[name]
    params = [mx.nd.array([r[j] for r in rows], dtype="float64") for j in range(len(rows[0]))]
    mx.random.seed(7)
    out = draw(*params, shape=NSAMPLES, dtype="float64")
    assert out.shape == (len(rows), NSAMPLES) and out.dtype == np.float64
    samples = out.asnumpy()
    for i, row in enumerate(rows):
        dist = dist_of(*row)
        buckets, probs = _discrete(dist) if discrete else _continuous(dist)
        verify_generator(lambda n, i=i: samples[i, :n], buckets, probs, nsamples=NSAMPLES,
                         nrepeat=1, success_rate=1.0, alpha=0.001)


def test_multinomial_chi_square_log_probabilities_and_defaults():
    p = np.array([[0.05, 0.25, 0.1, 0.6], [0.4, 0.0, 0.3, 0.3]])
    mx.random.seed(11)
    idx, logp = mx.nd.random.multinomial(mx.nd.array(p), shape=NSAMPLES, get_prob=True)
    idx, logp = idx.asnumpy(), logp.asnumpy()
    for r in range(2):
        values = [k for k in range(4) if p[r, k] > 0]       # chi-square needs p > 0
        verify_generator(lambda n, r=r: idx[r, :n], values, list(p[r, values]),
                         nsamples=NSAMPLES, nrepeat=1, success_rate=1.0, alpha=0.001)
    assert not (idx[1] == 1).any()
    p32 = p.astype(np.float32).astype(np.float64)           # the data's float32 values
    np.testing.assert_array_equal(logp, np.log(np.take_along_axis(p32, idx, 1)).astype(np.float32))
    one = mx.nd.random.multinomial(mx.nd.array([0.0, 0.0, 1.0]))
    assert one.shape == (1,) and one.dtype == np.int32 and one.asscalar() == 2


def test_multinomial_gradient_through_a_bound_executor():
    """The head gradient g of the log probabilities reaches p as
    sum over samples of g / p[sample] (REINFORCE), and nothing without get_prob."""
    p = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]], np.float32)
    sym = mx.sym.random.multinomial(mx.sym.Variable("p"), shape=(50,))    # get_prob=True
    grad = mx.nd.zeros(p.shape)
    exe = sym.bind(mx.cpu(), {"p": mx.nd.array(p)}, args_grad={"p": grad})
    idx, logp = exe.forward(is_train=True)
    head = np.random.default_rng(1).normal(size=(2, 50)).astype(np.float32)
    exe.backward([mx.nd.zeros((2, 50), dtype="int32"), mx.nd.array(head)])
    idx = idx.asnumpy()
    ref = np.zeros_like(p)
    for r in range(2):
        np.add.at(ref[r], idx[r], head[r] / p[r, idx[r]])
    np.testing.assert_allclose(grad.asnumpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(logp.asnumpy(), np.log(np.take_along_axis(p, idx, 1)),
                               rtol=1e-6)
    plain = mx.sym.random.multinomial(mx.sym.Variable("p"), get_prob=False)
    g2 = mx.nd.ones(p.shape)
    exe = plain.bind(mx.cpu(), {"p": mx.nd.array(p)}, args_grad={"p": g2})
    exe.forward(is_train=True)
    exe.backward([mx.nd.zeros((2,), dtype="int32")])
    assert (g2.asnumpy() == 0).all()


def test_sym_random_in_a_bound_executor_follows_the_seed():
    lam = mx.sym.Variable("lam")
    net = mx.sym.random.poisson(lam, shape=(1000,)) + mx.sym.random.gamma(2.0, 3.0,
                                                                           shape=(2, 1000))
    exe = net.bind(mx.cpu(), {"lam": mx.nd.array([4.0, 9.0])})
    mx.random.seed(5)
    a = exe.forward()[0].asnumpy()
    mx.random.seed(5)
    b = exe.forward()[0].asnumpy()
    assert a.shape == (2, 1000) and np.array_equal(a, b)
    np.testing.assert_allclose(a.mean(axis=1), [4 + 6, 9 + 6], atol=0.6)


@pytest.mark.parametrize("side", ["nd", "sym"])
def test_shapes_dtypes_and_errors_match_mxnet(side):
    for case, want in REFERENCE[side].items():
        try:
            if side == "nd":
                got = eval(case)
            else:
                sym = eval(case)
                args = {k: eval(v) for k, v in REFERENCE["sym_args"].items()
                        if k in sym.list_arguments()}
                got = sym.bind(mx.cpu(), args).forward()
        except Exception as e:     # noqa: BLE001 -- the reference names the type
            assert "error" in want, f"{case}: {e!r}"
            names = {c.__name__ for c in type(e).__mro__}
            assert want["error"] in names, f"{case}: {e!r}, MXNet raised {want['error']}"
            continue
        assert "error" not in want, f"{case}: returned, MXNet raised {want.get('error')}"
        outs = got if isinstance(got, (list, tuple)) else [got]
        assert [list(o.shape) for o in outs] == want["shapes"], case
        assert [np.dtype(o.dtype).name for o in outs] == want["dtypes"], case


def test_error_messages_are_mxnets():
    with pytest.raises(AssertionError, match="must all have the same type"):
        mx.nd.random.normal(mx.nd.zeros((2,)), 1.0)
    with pytest.raises(ValueError, match="must be either NDArray or numbers"):
        mx.nd.random.gamma("a")
    with pytest.raises(ValueError, match="must be either Symbol or numbers"):
        mx.sym.random.gamma("a")
    with pytest.raises(AssertionError, match="same type"):
        mx.sym.random.uniform(mx.sym.Variable("a"), 1.0)


def test_like_forms_and_module_names():
    x = mx.nd.zeros((3, 2), dtype="float64")
    for name in ("uniform", "normal", "exponential", "gamma", "poisson", "negative_binomial",
                 "generalized_negative_binomial"):
        y = getattr(mx.nd.random, f"{name}_like")(x)
        assert y.shape == (3, 2) and y.dtype == np.float64
        assert hasattr(mx.sym.random, f"{name}_like") and hasattr(mx.random, name)
        assert hasattr(mx.nd, f"sample_{name}") and hasattr(mx.sym, f"sample_{name}")
    assert mx.nd.sample_multinomial is mx.nd.op.sample_multinomial
    assert mx.nd.random.randn(2, 3).shape == (2, 3)


_STREAM = textwrap.dedent("""
    import hashlib
    import mx
    mx.random.seed(2024)
    outs = []
    for i in range(5):
        outs.append(mx.nd.random.gamma(0.5 + i, 2.0, shape=(200000,)))
        outs.append(mx.nd.random.poisson(mx.nd.array([1.0, 30.0]), shape=(70000,)))
        outs.append(mx.nd.random.generalized_negative_binomial(3.0, 0.3, shape=(1000,)))
        outs.append(mx.nd.random.multinomial(mx.nd.array([[0.3, 0.7]] * 4), shape=(40000,)))
        outs.append(mx.nd.random.exponential_like(mx.nd.zeros((500,))))
    h = hashlib.sha1()
    for o in outs:
        h.update(o.asnumpy().tobytes())
    print(h.hexdigest())
""")


def test_same_stream_for_any_worker_and_thread_count():
    runs = [("ThreadedEnginePerDevice", "1", "1"), ("ThreadedEnginePerDevice", "4", "2"),
            ("ThreadedEngine", "3", "3"), ("NaiveEngine", "1", "2")]
    results = set()
    for kind, workers, omp in runs:
        env = dict(os.environ, MXNET_ENGINE_TYPE=kind, MXNET_CPU_WORKER_NTHREADS=workers,
                   OMP_NUM_THREADS=omp)
        out = subprocess.run([sys.executable, "-c", _STREAM], capture_output=True, text=True,
                             check=True, timeout=300, env=env)
        results.add(out.stdout.strip())
    assert len(results) == 1 and len(results.pop()) == 40
