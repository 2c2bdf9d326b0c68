// The samplers of the random family's distributions, one body for both
// devices: random_cpu.h includes this file, and _random_gpu.py pastes it into
// its RawModule source (under NVRTC __CUDACC__ is defined and the functions
// become __device__), so a GPU call draws the CPU's values from the same
// (seed, offset), up to the last bits of log/exp/cos.
//
// The stream (mx_storage/_philox.pxd): output element i owns counter value
// c = offset + i and reads the Philox4x32-10 blocks (c, tag RNG_SAMPLE = 4,
// block k = 0, 1, 2, ...) in turn, 32 bits at a time.  An element is a pure
// function of (seed, offset + i), whatever the split across threads or GPU
// blocks, however many uniforms its rejection loop consumes; a call
// reserves one counter value per element.
//
// Exact algorithms only: Box-Muller for the normal, Marsaglia-Tsang (2000)
// for the gamma (boosted by U^(1/alpha) below alpha = 1), Knuth's product of
// uniforms for a Poisson mean below 10 and Hormann's PTRS (1993) above it,
// negative binomials as Poisson-gamma mixtures (as MXNet), the multinomial by
// inverse CDF.  Invalid parameters (MXNet's sampler CHECKs) give NaN.
#ifndef MX_OPS_RANDOM_SAMPLERS_H_
#define MX_OPS_RANDOM_SAMPLERS_H_

#ifdef __CUDACC__
#define MX_RNG_FN __device__ inline
#define MX_LGAMMA(x) lgamma(x)
#else
#include <math.h>
#define MX_RNG_FN static inline
// glibc's lgamma writes the global signgam; the _r form is thread safe.
static inline double mx_lgamma_r(double x) { int sign; return lgamma_r(x, &sign); }
#define MX_LGAMMA(x) mx_lgamma_r(x)
#endif

// The distributions (mx_ops/ops/random/distributions.py, DIST): what
// mx_sample(dist, a, b) draws.
enum MXDist {
  MX_DIST_UNIFORM = 0,      // [a, b)
  MX_DIST_NORMAL = 1,       // mean a, standard deviation b
  MX_DIST_EXPONENTIAL = 2,  // rate a
  MX_DIST_GAMMA = 3,        // shape a, scale b
  MX_DIST_POISSON = 4,      // mean a
  MX_DIST_NEG_BINOMIAL = 5, // k = a failures, success probability p = b
  MX_DIST_GEN_NEG_BINOMIAL = 6  // mean a, dispersion b
};

#define MX_RNG_TAG 4u   // RNG_SAMPLE of mx_storage/_philox.pxd

struct MXRng {
  unsigned long long seed, c;
  unsigned int block, pos, w[4];
};

MX_RNG_FN MXRng mx_rng(unsigned long long seed, unsigned long long c) {
  MXRng r;
  r.seed = seed;
  r.c = c;
  r.block = 0;
  r.pos = 4;
  return r;
}

// Random123's Philox4x32-10 of block (c, MX_RNG_TAG, r->block) under key seed.
MX_RNG_FN void mx_rng_refill(MXRng *r) {
  unsigned int c0 = (unsigned int)r->c, c1 = (unsigned int)(r->c >> 32), c2 = MX_RNG_TAG;
  unsigned int c3 = r->block++;
  unsigned int k0 = (unsigned int)r->seed, k1 = (unsigned int)(r->seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1;
    c3 = (unsigned int)p0;
    c0 = n0;
    c2 = n2;
  }
  r->w[0] = c0;
  r->w[1] = c1;
  r->w[2] = c2;
  r->w[3] = c3;
  r->pos = 0;
}

MX_RNG_FN unsigned int mx_rng_u32(MXRng *r) {
  if (r->pos == 4) mx_rng_refill(r);
  return r->w[r->pos++];
}

// Uniform on [0, 1) with 53 random bits.
MX_RNG_FN double mx_rng_uniform(MXRng *r) {
  const unsigned long long hi = mx_rng_u32(r), lo = mx_rng_u32(r);
  return (double)((hi << 21) | (lo >> 11)) * (1.0 / 9007199254740992.0);
}

// Uniform on (0, 1]: safe under log.
MX_RNG_FN double mx_rng_open(MXRng *r) { return 1.0 - mx_rng_uniform(r); }

MX_RNG_FN double mx_rng_normal(MXRng *r) {
  const double u1 = mx_rng_open(r), u2 = mx_rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// Gamma(alpha, 1), alpha > 0: Marsaglia and Tsang, "A simple method for
// generating gamma variables" (ACM TOMS 26(3), 2000).
MX_RNG_FN double mx_rng_gamma(MXRng *r, double alpha) {
  double boost = 1.0;
  if (alpha < 1.0) {
    // Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha).
    boost = pow(mx_rng_open(r), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0, cc = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = mx_rng_normal(r);
      v = 1.0 + cc * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = mx_rng_open(r), x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 || log(u) < 0.5 * x2 + d * (1.0 - v + log(v)))
      return boost * d * v;
  }
}

// Poisson(lam), lam >= 0.
MX_RNG_FN double mx_rng_poisson(MXRng *r, double lam) {
  if (lam < 10.0) {
    // Knuth: the count of uniforms whose running product stays above e^-lam.
    const double limit = exp(-lam);
    double prod = mx_rng_uniform(r), k = 0.0;
    while (prod > limit) {
      k += 1.0;
      prod *= mx_rng_uniform(r);
    }
    return k;
  }
  // Hormann, "The transformed rejection method for generating Poisson
  // random variables" (Insurance: Mathematics and Economics 12, 1993), PTRS.
  const double slam = sqrt(lam), loglam = log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = mx_rng_uniform(r) - 0.5, v = mx_rng_uniform(r);
    const double us = 0.5 - fabs(u), k = floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -lam + k * loglam - MX_LGAMMA(k + 1.0))
      return k;
  }
}

MX_RNG_FN double mx_rng_nan() { return 0.0 / 0.0; }

// One draw of distribution dist with parameters (a, b), in double.
MX_RNG_FN double mx_sample(int dist, double a, double b, MXRng *r) {
  switch (dist) {
    case MX_DIST_UNIFORM:
      return a < b ? a + (b - a) * mx_rng_uniform(r) : mx_rng_nan();
    case MX_DIST_NORMAL:
      return b >= 0.0 ? a + b * mx_rng_normal(r) : mx_rng_nan();
    case MX_DIST_EXPONENTIAL:
      return a > 0.0 ? -log(mx_rng_open(r)) / a : mx_rng_nan();
    case MX_DIST_GAMMA:
      return a > 0.0 && b > 0.0 ? b * mx_rng_gamma(r, a) : mx_rng_nan();
    case MX_DIST_POISSON:
      return a >= 0.0 ? mx_rng_poisson(r, a) : mx_rng_nan();
    case MX_DIST_NEG_BINOMIAL:
      // Failures before the k-th success: Poisson(Gamma(k, (1 - p) / p)).
      if (!(a > 0.0 && b > 0.0 && b <= 1.0)) return mx_rng_nan();
      return b == 1.0 ? 0.0 : mx_rng_poisson(r, mx_rng_gamma(r, a) * (1.0 - b) / b);
    case MX_DIST_GEN_NEG_BINOMIAL:
      // Mean mu, variance mu + alpha mu^2: Poisson(Gamma(1/alpha, alpha mu)).
      if (!(a >= 0.0 && b >= 0.0)) return mx_rng_nan();
      if (b == 0.0 || a == 0.0) return mx_rng_poisson(r, a);
      return mx_rng_poisson(r, mx_rng_gamma(r, 1.0 / b) * b * a);
    default:
      return mx_rng_nan();
  }
}

// A probability as a double (CuPy's float16 converts through float).
#ifdef __CUDACC__
__device__ inline double mx_rng_double(float16 x) { return (double)(float)x; }
#endif
template <typename P> MX_RNG_FN double mx_rng_double(P x) { return (double)x; }

// The outcome of one multinomial draw over the k probabilities p (which
// sum to one): the first index whose running sum passes a uniform, else the
// last index with a positive probability (rounding of the sum).
template <typename P>
MX_RNG_FN long long mx_multinomial(const P *p, long long k, MXRng *r) {
  const double u = mx_rng_uniform(r);
  double acc = 0.0;
  long long last = 0;
  for (long long j = 0; j < k; ++j) {
    const double pj = mx_rng_double(p[j]);
    if (pj > 0.0) last = j;
    acc += pj;
    if (u < acc) return j;
  }
  return last;
}

#endif  // MX_OPS_RANDOM_SAMPLERS_H_
