"""samplers.h's own maths (branch-free log, exp, cos/sin of 2 pi u, so that
the samplers' loops vectorize and the GPU twin computes the same): their
error against long double references and against libm (NumPy), on the
arguments the samplers give them.  The bounds record the measured maxima."""
import numpy as np
import pytest

from mx_ops.ops.random._random_cpu import sampler_math

LD = np.longdouble
TWO_PI = 2 * LD("3.14159265358979323846264338327950288")
pytestmark = pytest.mark.skipif(np.finfo(LD).nmant < 60, reason="needs 80-bit long double")


def _ulps(got, want, dtype):
    """|got - want| in units of the last place of want (at dtype's precision)."""
    want = np.asarray(want, LD)
    ulp = np.spacing(np.abs(want).astype(dtype)).astype(LD)
    return np.abs(np.asarray(got, LD) - want) / ulp


def _grid53(n, rng):
    """Uniforms on [0, 1) on the 2^-53 grid, with the ends of the range."""
    k = rng.integers(0, 2 ** 53, n, dtype=np.uint64)
    k[:4] = [0, 1, 2 ** 52, 2 ** 53 - 1]
    return k.astype(np.float64) * 2.0 ** -53


def test_double_log_within_one_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([1.0 - _grid53(200000, rng),                  # log(1 - u), u in [0, 1)
                        np.exp(rng.uniform(-700, 700, 100000)),      # log(v) of the squeeze
                        [np.sqrt(2.0), np.nextafter(np.sqrt(2.0), 0), 1.0, 2.0 ** -1022]])
    got = sampler_math("log", x)
    assert (got[x == 1.0] == 0.0).all()
    assert _ulps(got, np.log(x.astype(LD)), np.float64).max() <= 1.0      # measured 0.80
    assert _ulps(got, np.log(x), np.float64).max() <= 1.0                  # libm: 1


def test_double_exp_within_one_ulp_and_subnormals_rounded():
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.uniform(-708, 709, 200000), rng.uniform(-1, 1, 100000), [0.0]])
    got = sampler_math("exp", y)
    assert got[-1] == 1.0
    assert _ulps(got, np.exp(y.astype(LD)), np.float64).max() <= 1.0       # measured 0.77
    assert _ulps(got, np.exp(y), np.float64).max() <= 1.0
    # below 2^-1022: within one subnormal step; below -745.2 (and -inf): zero
    y = np.concatenate([rng.uniform(-745, -708.4, 10000), [-746.0, -1e4, -np.inf]])
    got = sampler_math("exp", y)
    assert (np.abs(got.astype(LD) - np.exp(y.astype(LD))) <= 2.0 ** -1074).all()
    assert (got[-3:] == 0).all()


def _cos_sin_2pi(u):
    """cos and sin of 2 pi u in long double, reduced exactly first (u - q/4
    is exact in double), so that values near zero keep their precision."""
    q = np.rint(4 * u)
    r = (u - q / 4).astype(LD) * TWO_PI
    c0, s0 = np.cos(r), np.sin(r)
    q = q.astype(np.int64) % 4
    return (np.choose(q, [c0, -s0, -c0, s0]), np.choose(q, [s0, c0, -s0, -c0]))


def test_double_cos_sin_of_2_pi_u_within_two_ulp():
    rng = np.random.default_rng(2)
    u = np.concatenate([_grid53(300000, rng), np.arange(8) / 8.0,
                        np.arange(8) / 8.0 + 2.0 ** -53, np.arange(1, 8) / 8.0 - 2.0 ** -53])
    c, s = sampler_math("sincos2pi", u)
    assert np.array_equal(sampler_math("cos2pi", u), c)
    rc, rs = _cos_sin_2pi(u)
    assert (c[u == 0.25] == 0).all() and (s[u == 0.5] == 0).all() and (c[u == 0] == 1).all()
    assert _ulps(c, rc, np.float64).max() <= 2.0                          # measured 1.75
    assert _ulps(s, rs, np.float64).max() <= 2.0                          # measured 1.78
    # against libm's cos(2 pi u), whose own argument rounds: absolute
    assert np.abs(c - np.cos(2 * np.pi * u)).max() <= 8e-16


def test_float_log_and_sincos_within_a_few_ulp():
    rng = np.random.default_rng(3)
    w = rng.integers(0, 2 ** 32, 300000, dtype=np.uint64)
    u31 = ((w >> np.uint64(1)).astype(np.float32) * np.float32(2.0 ** -31)
           + np.float32(2.0 ** -32))                                      # mx_rng_u31_open
    assert _ulps(sampler_math("logf", u31), np.log(u31.astype(LD)), np.float32).max() <= 2.0
    u24 = (w >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)  # mx_rng_u24
    c, s = sampler_math("sincosf2pi", u24)
    rc, rs = _cos_sin_2pi(u24.astype(np.float64))
    assert np.abs(c - rc).max() <= 2.0 ** -23              # measured 1.5 2^-24
    assert np.abs(s - rs).max() <= 2.0 ** -23
