"""Checking random generators: mean, variance and chi-square tests."""
import numpy as np

from mx._testing.compare import _as_numpy


# -- checking random generators ------------------------------------------------------
def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equiprobable buckets (lo, hi) from the quantile function
    ``ppf``, and their probabilities."""
    assert nbuckets > 0
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` lies within 3 standard
    errors of ``mu``."""
    sample_mean = np.array(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < sample_mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` lies within 3
    standard errors of ``sigma**2``."""
    sample_var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < sample_var < sigma ** 2 + bound)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator(nsamples)`` against
    ``probs`` over ``buckets``: (lo, hi) ranges for a continuous
    distribution (ascending, disjoint), or the values of a discrete one.
    Returns (p value, observed counts, expected counts)."""
    from scipy import stats
    assert isinstance(buckets, list)
    assert len(probs) == len(buckets)
    samples = _as_numpy(generator(nsamples))
    samples = np.asarray(samples).ravel()
    if isinstance(buckets[0], (list, tuple)):
        edges = np.empty(2 * len(buckets), np.float64)
        for i, (lo, hi) in enumerate(buckets):
            assert lo <= hi
            if i < len(buckets) - 1:
                assert hi <= buckets[i + 1][0]
            edges[2 * i], edges[2 * i + 1] = lo, hi
        # Samples in [lo_i, hi_i) land on odd positions 2i+1.
        ids = np.searchsorted(edges, samples, side='right')
        obs_freq = np.bincount(ids, minlength=2 * len(buckets) + 1)[1:2 * len(buckets):2]
    else:
        obs_freq = np.array([(samples == b).sum() for b in buckets])
    expected_freq = nsamples * np.asarray(probs, np.float64)
    chisq = float(((obs_freq - expected_freq) ** 2 / expected_freq).sum())
    p = float(stats.chi2.sf(chisq, len(buckets) - 1))
    return p, obs_freq, expected_freq


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Runs chi_square_check ``nrepeat`` times and asserts that at least a
    share ``success_rate`` of them pass at level ``alpha``; returns the p
    values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    cs_ret_l = [r[0] for r in results]
    if (np.array(cs_ret_l) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, "
                             "expected_freq=%s.\nbuckets=%s, probs=%s"
                             % (cs_ret_l, [r[1] for r in results], [r[2] for r in results],
                                buckets, probs))
    return cs_ret_l
