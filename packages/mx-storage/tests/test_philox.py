"""The Philox4x32-10 CPU generator against independent references: Random123's
known-answer vectors, a pure-Python Philox, pure-Python derivations of the
stream definition in _philox.pxd, and statistical tests with fixed seeds (so
they are deterministic; the bounds are ~6 standard errors)."""
import math
import random

import numpy as np
import pytest

from mx_storage import _philox

M32 = 0xFFFFFFFF
UNIFORM, NORMAL, RANDINT = 1, 2, 3      # counter word 2, as in _philox.pxd


# --- independent references ------------------------------------------------

def philox_ref(ctr, key, rounds=10):
    """Philox4x32 as in Random123's philox.h, in Python integers."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & M32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & M32)
    return c0, c1, c2, c3


def block_ref(seed, offset, i, tag, retry=0):
    c = (offset + i) % 2**64
    return philox_ref((c & M32, c >> 32, tag, retry), (seed & M32, seed >> 32))


def uniform01_ref(seed, offset, i, bits):
    w = block_ref(seed, offset, i, UNIFORM)
    if bits == 24:
        return (w[0] >> 8) / 2**24
    return (((w[0] << 32) | w[1]) >> 11) / 2**53


def normal_ref(seed, offset, i):
    w = block_ref(seed, offset, i, NORMAL)
    u1 = ((((w[0] << 32) | w[1]) >> 11) + 1) / 2**53
    u2 = (((w[2] << 32) | w[3]) >> 11) / 2**53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def randint_ref(seed, offset, i, low, high, bits, retries):
    """Lemire's multiply-shift with rejection over the element's blocks."""
    r = high - low
    thresh = 2**bits % r
    retry = 0
    while True:
        w = block_ref(seed, offset, i, RANDINT, retry)
        cands = w if bits == 32 else ((w[0] << 32) | w[1], (w[2] << 32) | w[3])
        for x in cands:
            m = x * r
            if m % 2**bits >= thresh:
                retries.append(retry)
                return low + (m >> bits)
        retry += 1


def chi2_pvalue(stat, df):
    """Upper tail of chi-square: scipy when present, else Wilson-Hilferty
    (good to a few percent in log p at these df, ample for p > 1e-6)."""
    try:
        from scipy.stats import chi2
    except ImportError:
        z = (((stat / df) ** (1 / 3) - (1 - 2 / (9 * df)))
             / math.sqrt(2 / (9 * df)))
        return 0.5 * math.erfc(z / math.sqrt(2))
    return float(chi2.sf(stat, df))


def chi2_uniform(counts):
    counts = np.asarray(counts, dtype=np.float64)
    expected = counts.sum() / counts.size
    stat = float(((counts - expected) ** 2 / expected).sum())
    return stat, chi2_pvalue(stat, counts.size - 1)


# --- the block function ----------------------------------------------------

KAT = [  # Random123 examples/kat_vectors, philox4x32 10 rounds
    ((0, 0, 0, 0), (0, 0),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32, M32, M32, M32), (M32, M32),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr, key, expected", KAT)
def test_known_answers(ctr, key, expected):
    assert _philox.philox_block(ctr, key) == expected
    assert philox_ref(ctr, key) == expected


def test_block_matches_python_reference():
    rng = random.Random(1234)
    for _ in range(200):
        ctr = tuple(rng.getrandbits(32) for _ in range(4))
        key = tuple(rng.getrandbits(32) for _ in range(2))
        assert _philox.philox_block(ctr, key) == philox_ref(ctr, key)


def test_block_bad_input():
    with pytest.raises(ValueError, match="'ctr'"):
        _philox.philox_block((0, 0, 0), (0, 0))
    with pytest.raises(ValueError, match="'key'"):
        _philox.philox_block((0, 0, 0, 0), (0, 2**32))


def test_capi_exported():
    names = {"philox4x32_10", "draws_per_element",
             "fill_uniform_f32", "fill_uniform_f64",
             "fill_normal_f32", "fill_normal_f64",
             "fill_randint_i32", "fill_randint_i64"}
    assert names <= set(_philox.__pyx_capi__)


def test_draws_per_element():
    for kind in _philox.RngKind:
        assert _philox.draws_per_element(kind) == 1
    assert [int(k) for k in _philox.RngKind] == [UNIFORM, NORMAL, RANDINT]


# --- the stream definition, pinned -----------------------------------------

SEEDS_OFFSETS = [(0, 0), (42, 7), (0x123456789ABCDEF0, 2**32 - 5),
                 (2**64 - 1, 2**64 - 3)]       # the last wraps the counter


@pytest.mark.parametrize("seed, offset", SEEDS_OFFSETS)
def test_uniform_matches_definition(seed, offset):
    n = 16
    f32 = _philox.uniform(seed, offset, n, dtype="float32")
    f64 = _philox.uniform(seed, offset, n, dtype="float64")
    for i in range(n):
        assert f32[i] == uniform01_ref(seed, offset, i, 24)
        assert f64[i] == uniform01_ref(seed, offset, i, 53)
    # float32's 24 bits are the top of float64's 53
    np.testing.assert_array_equal(f32, np.floor(f64 * 2**24) / 2**24)
    lo, hi = -2.5, 4.0
    scaled = _philox.uniform(seed, offset, n, lo, hi, dtype="float64")
    expected = [lo + (hi - lo) * uniform01_ref(seed, offset, i, 53) for i in range(n)]
    np.testing.assert_allclose(scaled, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed, offset", SEEDS_OFFSETS)
def test_normal_matches_definition(seed, offset):
    n = 16
    f64 = _philox.normal(seed, offset, n, 1.5, 2.0, dtype="float64")
    expected = [1.5 + 2.0 * normal_ref(seed, offset, i) for i in range(n)]
    np.testing.assert_allclose(f64, expected, rtol=1e-13, atol=1e-13)
    # float32 is computed in double and rounded once
    f32 = _philox.normal(seed, offset, n, 1.5, 2.0, dtype="float32")
    np.testing.assert_array_equal(f32, f64.astype(np.float32))


@pytest.mark.parametrize("seed, offset", SEEDS_OFFSETS)
@pytest.mark.parametrize("dtype, bits, low, high", [
    ("int32", 32, -3, 7),
    ("int32", 32, -2**31, 1),                # r = 2**31 + 1: ~1/16 blocks retried
    ("int32", 32, -2**31, 2**31 - 1),
    ("int64", 64, 10, 11),
    ("int64", 64, -2**63, 1),                # r = 2**63 + 1: ~1/4 blocks retried
    ("int64", 64, -2**63, 2**63 - 1),
])
def test_randint_matches_definition(seed, offset, dtype, bits, low, high):
    n = 200
    got = _philox.randint(seed, offset, n, low, high, dtype=dtype)
    retries = []
    expected = [randint_ref(seed, offset, i, low, high, bits, retries)
                for i in range(n)]
    assert got.tolist() == expected
    if high - low == 2**(bits - 1) + 1:
        assert max(retries) > 0         # the retry path was exercised


# --- uniform ---------------------------------------------------------------

N = 1_000_000


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("low, high", [(0.0, 1.0), (-2.0, 3.0)])
def test_uniform_statistics(dtype, low, high):
    x = _philox.uniform(2024, 11, N, low, high, dtype=dtype)
    assert x.dtype == np.dtype(dtype) and x.shape == (N,)
    assert x.min() >= low and x.max() < high
    x = x.astype(np.float64)
    span = high - low
    mean_se = span / math.sqrt(12 * N)
    var_se = span**2 / math.sqrt(180 * N)
    assert abs(x.mean() - (low + high) / 2) < 6 * mean_se
    assert abs(x.var() - span**2 / 12) < 6 * var_se
    buckets = np.minimum(((x - low) / span * 100).astype(np.int64), 99)
    stat, p = chi2_uniform(np.bincount(buckets, minlength=100))
    assert p > 1e-6, (stat, p)


def test_uniform_never_reaches_high():
    # Half of low + (high - low) * u rounds to high in float32; it is clamped.
    high = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    x = _philox.uniform(5, 0, 10_000, 1.0, high, dtype="float32")
    assert (x == np.float32(1.0)).all()
    x = _philox.uniform(5, 0, 10_000, 1.0, 1.0 + 2**-52, dtype="float64")
    assert (x == 1.0).all()


def test_uniform_huge_float64_range():
    x = _philox.uniform(5, 0, 100_000, -1.7e308, 1.7e308, dtype="float64")
    assert np.isfinite(x).all()
    assert x.min() >= -1.7e308 and x.max() < 1.7e308
    assert abs((x / 1.7e308).mean()) < 6 / math.sqrt(3 * 100_000)


# --- normal ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (2.0, 3.0)])
def test_normal_statistics(dtype, mean, std):
    x = _philox.normal(77, 3, N, mean, std, dtype=dtype)
    assert x.dtype == np.dtype(dtype) and x.shape == (N,)
    assert np.isfinite(x).all()
    z = (x.astype(np.float64) - mean) / std
    assert abs(z.mean()) < 6 / math.sqrt(N)
    assert abs(z.std() - 1.0) < 6 / math.sqrt(2 * N)
    for k, p in [(1, 0.682689492137086), (2, 0.954499736103642),
                 (3, 0.997300203936740)]:
        frac = float((np.abs(z) < k).mean())
        assert abs(frac - p) < 6 * math.sqrt(p * (1 - p) / N), (k, frac)
    # symmetry and a fourth-moment check (kurtosis 3, SE ~ sqrt(96 / N))
    assert abs(float((z > 0).mean()) - 0.5) < 6 * 0.5 / math.sqrt(N)
    assert abs(float((z**4).mean()) - 3.0) < 6 * math.sqrt(96 / N)


def test_normal_zero_std():
    x = _philox.normal(1, 0, 100, 4.25, 0.0, dtype="float64")
    assert (x == 4.25).all()


# --- randint ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_randint_small_range(dtype):
    x = _philox.randint(9, 0, N, -3, 7, dtype=dtype)
    assert x.dtype == np.dtype(dtype)
    assert x.min() == -3 and x.max() == 6
    stat, p = chi2_uniform(np.bincount(x + 3, minlength=10))
    assert p > 1e-6, (stat, p)


@pytest.mark.parametrize("dtype, low, high", [
    ("int32", -2**31, 2**31 - 1),
    ("int64", -2**63, 2**63 - 1),
])
def test_randint_full_range(dtype, low, high):
    n = 200_000
    x = _philox.randint(3, 1, n, low, high, dtype=dtype)
    assert x.dtype == np.dtype(dtype)
    assert int(x.min()) >= low and int(x.max()) < high
    u = (x.astype(np.float64) - low) / (high - low)   # ~U[0, 1)
    assert abs(u.mean() - 0.5) < 6 / math.sqrt(12 * n)
    stat, p = chi2_uniform(np.bincount((u * 100).astype(np.int64), minlength=100))
    assert p > 1e-6, (stat, p)


@pytest.mark.parametrize("dtype, low, high", [
    ("int32", -2**31, 2**30),           # r = 3 * 2**30
    ("int64", -2**63, 2**62),           # r = 3 * 2**62
])
def test_randint_unbiased_awkward_range(dtype, low, high):
    # Multiply-shift without rejection maps two inputs to every value v with
    # (v - low) % 3 == 0 and one input to the others: residues 1/2, 1/4, 1/4.
    n = 300_000
    x = _philox.randint(8, 0, n, low, high, dtype=dtype)
    assert int(x.min()) >= low and int(x.max()) < high
    d = x.astype(np.uint64) - np.uint64(low % 2**64)     # wraps to v - low
    stat, p = chi2_uniform(np.bincount((d % np.uint64(3)).astype(np.int64),
                                       minlength=3))
    assert p > 1e-6, (stat, p)


def test_randint_single_value():
    assert (_philox.randint(1, 0, 50, 5, 6) == 5).all()
    assert (_philox.randint(1, 0, 50, -2**63, -2**63 + 1, dtype="int64")
            == -2**63).all()


# --- reproducibility and independence of n, start, split -------------------

DRAWS = [
    (_philox.uniform, dict(dtype="float32")),
    (_philox.uniform, dict(dtype="float64")),
    (_philox.normal, dict(dtype="float32")),
    (_philox.normal, dict(dtype="float64")),
    (_philox.randint, dict(low=-100, high=1000, dtype="int32")),
    (_philox.randint, dict(low=-100, high=1000, dtype="int64")),
]
IDS = ["uniform32", "uniform64", "normal32", "normal64", "randint32", "randint64"]


@pytest.mark.parametrize("draw, kw", DRAWS, ids=IDS)
def test_reproducible(draw, kw):
    a = draw(123, 456, 1000, **kw)
    np.testing.assert_array_equal(a, draw(123, 456, 1000, **kw))
    assert (a != draw(124, 456, 1000, **kw)).mean() > 0.9
    assert (a != draw(123 + 2**32, 456, 1000, **kw)).mean() > 0.9   # key word 1
    assert (a != draw(123, 457, 1000, **kw)).mean() > 0.9


@pytest.mark.parametrize("draw, kw", DRAWS, ids=IDS)
def test_element_depends_only_on_counter(draw, kw):
    full = draw(99, 1000, 1000, **kw)
    np.testing.assert_array_equal(full[:10], draw(99, 1000, 10, **kw))
    np.testing.assert_array_equal(full[500:], draw(99, 1000, 500, start=500, **kw))
    np.testing.assert_array_equal(full[123:456],
                                  draw(99, 1000, 333, start=123, **kw))
    # the advance rule: a draw of k elements is followed at offset + k
    np.testing.assert_array_equal(full[300:], draw(99, 1300, 700, **kw))
    assert draw(99, 1000, 0, **kw).shape == (0,)


def test_kinds_use_distinct_counters():
    u = _philox.uniform(5, 0, 1000, dtype="float64")
    z = _philox.normal(5, 0, 1000, dtype="float64")
    # were they the same block, z would be a function of u's first words
    assert abs(np.corrcoef(u, z)[0, 1]) < 6 / math.sqrt(1000)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_thread_count_invariance(dtype):
    n = 100_003
    expected = _philox.uniform(31, 17, n, -1.0, 2.0, dtype=dtype)
    for nthreads in (1, 2, 3, 7):
        out = np.full(n, np.nan, dtype=dtype)
        assert _philox.fill_uniform_parallel(31, 17, out, nthreads, -1.0, 2.0) is out
        np.testing.assert_array_equal(out, expected)
    small = np.empty(5, dtype=dtype)                # more threads than elements
    _philox.fill_uniform_parallel(31, 17, small, 7, -1.0, 2.0)
    np.testing.assert_array_equal(small, expected[:5])


def test_fill_into_existing_arrays():
    out = np.empty((3, 4), np.float64)
    _philox.fill_normal(out, 6, 2)
    np.testing.assert_array_equal(out.ravel(), _philox.normal(6, 2, 12, dtype="float64"))
    out = np.empty((2, 5), np.int64)
    _philox.fill_randint(out, 6, 2, 0, 9, start=4)
    np.testing.assert_array_equal(out.ravel(),
                                  _philox.randint(6, 2, 10, 0, 9, "int64", start=4))
    with pytest.raises(ValueError, match="'out'"):
        _philox.fill_uniform(np.empty(10, np.float32)[::2], 0, 0)
    with pytest.raises(ValueError, match="'out'"):
        _philox.fill_uniform(np.empty(10, np.int32), 0, 0)


# --- bad input -------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda: _philox.uniform(0, 0, -1), "n"),
    (lambda: _philox.normal(0, 0, -5), "n"),
    (lambda: _philox.randint(0, 0, -1, 0, 3), "n"),
    (lambda: _philox.uniform(-1, 0, 3), "seed"),
    (lambda: _philox.uniform(2**64, 0, 3), "seed"),
    (lambda: _philox.normal(0, -1, 3), "offset"),
    (lambda: _philox.randint(0, 0, 3, 0, 3, start=-1), "start"),
    (lambda: _philox.uniform(0, 0, 3, 1.0, 1.0), "high"),
    (lambda: _philox.uniform(0, 0, 3, 2.0, 1.0), "high"),
    (lambda: _philox.uniform(0, 0, 3, 1.0, 1.0 + 1e-12), "high"),   # equal in float32
    (lambda: _philox.uniform(0, 0, 3, float("nan"), 1.0), "low"),
    (lambda: _philox.uniform(0, 0, 3, 0.0, 1e39), "high"),          # inf in float32
    (lambda: _philox.uniform(0, 0, 3, 0.0, float("inf"), dtype="float64"), "high"),
    (lambda: _philox.normal(0, 0, 3, 0.0, -1.0), "std"),
    (lambda: _philox.normal(0, 0, 3, 0.0, float("nan")), "std"),
    (lambda: _philox.normal(0, 0, 3, float("inf"), 1.0), "mean"),
    (lambda: _philox.randint(0, 0, 3, 5, 5), "high"),
    (lambda: _philox.randint(0, 0, 3, 5, 2), "high"),
    (lambda: _philox.randint(0, 0, 3, 0, 2**31), "high"),
    (lambda: _philox.randint(0, 0, 3, -2**63 - 1, 0, dtype="int64"), "low"),
    (lambda: _philox.uniform(0, 0, 3, dtype="int32"), "dtype"),
    (lambda: _philox.uniform(0, 0, 3, dtype="float16"), "dtype"),
    (lambda: _philox.normal(0, 0, 3, dtype="nonsense"), "dtype"),
    (lambda: _philox.randint(0, 0, 3, 0, 5, dtype="float32"), "dtype"),
    (lambda: _philox.randint(0, 0, 3, 0, 5, dtype=None), "dtype"),
    (lambda: _philox.fill_uniform_parallel(0, 0, np.empty(3, np.float32), 0), "nthreads"),
    (lambda: _philox.fill_uniform_parallel(0, 0, np.empty(3, np.float32), 2, 1.0, 0.0),
     "high"),
])
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=f"'{name}'"):
        call()


def test_bad_types():
    with pytest.raises(TypeError, match="'n'"):
        _philox.uniform(0, 0, 2.5)
    with pytest.raises(TypeError, match="'low'"):
        _philox.randint(0, 0, 3, 0.5, 3)
    with pytest.raises(TypeError, match="'mean'"):
        _philox.normal(0, 0, 3, "a")
