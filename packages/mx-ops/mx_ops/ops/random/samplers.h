// The samplers of the random family's distributions, one body for both
// devices: random_cpu.h includes this file, and _random_gpu.py pastes it into
// its RawModule source (under NVRTC __CUDACC__ is defined and the functions
// become __device__), so a GPU call draws the CPU's values from the same
// (seed, offset), up to the last bits of log/exp/cos.
//
// Two layouts of the stream (mx_storage/_philox.pxd), both reading the
// Philox4x32-10 blocks (c, tag RNG_SAMPLE = 4, k) and both reserving one
// counter value per element:
//
//   direct (uniform, normal, exponential, the multinomial's uniforms): one
//   block feeds E neighbouring elements, element i taking words of block
//   c = offset + i / E.  float32 (and float16, which rounds it) takes E = 4,
//   one 32-bit word per element: 24-bit uniforms, Box-Muller pairs (w0, w1)
//   and (w2, w3) giving the cosine and the sine normal, exponentials from
//   31-bit uniforms; computed in float by mx_rng_logf/mx_rng_sincos2pi, whose
//   error is a few ulp.  float64 takes E = 2, 53 bits per uniform, the
//   double mx_rng_log/mx_rng_sincos2pi.  No rejection: every element is a
//   fixed function of its block.
//
//   per element (gamma, Poisson, the negative binomials): output element i
//   owns counter value c = offset + i and reads the blocks (c, 4, k), k = 0,
//   1, 2, ... in turn, 32 bits at a time, however many uniforms its
//   rejection loop consumes.
//
// Either way an element is a pure function of (seed, offset, i), whatever
// the split across threads or GPU blocks.
//
// Exact algorithms only: Box-Muller for the normal, Marsaglia-Tsang (2000)
// for the gamma (boosted by U^(1/alpha) below alpha = 1), the inverse CDF
// for a Poisson mean below 10 and Hormann's PTRS (1993) above it,
// negative binomials as Poisson-gamma mixtures (as MXNet), the multinomial by
// inverse CDF.  Invalid parameters (MXNet's sampler CHECKs) give NaN.
#ifndef MX_OPS_RANDOM_SAMPLERS_H_
#define MX_OPS_RANDOM_SAMPLERS_H_

// MX_RNG_VEC: a branch-free function a CPU loop vectorizes (inlined, as the
// vectorizer needs).
#ifdef __CUDACC__
#define MX_RNG_FN __device__ inline
#define MX_RNG_VEC __device__ inline
#define MX_LGAMMA(x) lgamma(x)
#else
#include <math.h>
#define MX_RNG_FN static inline
#define MX_RNG_VEC static inline __attribute__((always_inline))
// glibc's lgamma writes the global signgam; the _r form is thread safe.
static inline double mx_lgamma_r(double x) { int sign; return lgamma_r(x, &sign); }
#define MX_LGAMMA(x) mx_lgamma_r(x)
#endif

#ifdef __CUDACC__
#define MX_F2U(x) __float_as_uint(x)
#define MX_U2F(x) __uint_as_float(x)
#define MX_D2U(x) ((unsigned long long)__double_as_longlong(x))
#define MX_U2D(x) __longlong_as_double((long long)(x))
#else
#define MX_F2U(x) __builtin_bit_cast(unsigned int, (float)(x))
#define MX_U2F(x) __builtin_bit_cast(float, (unsigned int)(x))
#define MX_D2U(x) __builtin_bit_cast(unsigned long long, (double)(x))
#define MX_U2D(x) __builtin_bit_cast(double, (unsigned long long)(x))
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
// Blocks of an element's per-element stream a CPU loop computes ahead, for
// a chunk of elements at once (vectorized, random_isa.h); the draws are the
// same as computing each block when its first word is read.
#define MX_RNG_PREFETCH 2

// An element's per-element stream: words w[pos, end) are ready, the next
// block to compute is `block`.
struct MXRng {
  unsigned long long seed, c;
  unsigned int block, pos, end, w[MX_RNG_PREFETCH * 4];
};

MX_RNG_FN MXRng mx_rng(unsigned long long seed, unsigned long long c) {
  MXRng r;
  r.seed = seed;
  r.c = c;
  r.block = 0;
  r.pos = r.end = 0;
  return r;
}

// Random123's Philox4x32-10 of block (c, MX_RNG_TAG, k) under key seed.
// Branch-free integer arithmetic: a loop over blocks vectorizes (the words
// returned by value, which GCC keeps in registers where an array's
// stores would become scatters).
struct MXBlock { unsigned int w0, w1, w2, w3; };
MX_RNG_VEC MXBlock mx_philox_block(unsigned long long seed, unsigned long long c,
                                   unsigned int k) {
  unsigned int c0 = (unsigned int)c, c1 = (unsigned int)(c >> 32), c2 = MX_RNG_TAG, c3 = k;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
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
  MXBlock b = {c0, c1, c2, c3};
  return b;
}

MX_RNG_VEC void mx_philox(unsigned long long seed, unsigned long long c, unsigned int k,
                          unsigned int *w) {
  const MXBlock b = mx_philox_block(seed, c, k);
  w[0] = b.w0;
  w[1] = b.w1;
  w[2] = b.w2;
  w[3] = b.w3;
}

MX_RNG_FN void mx_rng_refill(MXRng *r) {
  mx_philox(r->seed, r->c, r->block++, r->w);
  r->pos = 0;
  r->end = 4;
}

// The stream of element c with its first MX_RNG_PREFETCH blocks given:
// their word j at words[j * stride].
MX_RNG_FN MXRng mx_rng_ahead(unsigned long long seed, unsigned long long c,
                             const unsigned int *words, long long stride) {
  MXRng r = mx_rng(seed, c);
  for (int k = 0; k < MX_RNG_PREFETCH * 4; ++k) r.w[k] = words[k * stride];
  r.block = MX_RNG_PREFETCH;
  r.end = MX_RNG_PREFETCH * 4;
  return r;
}

MX_RNG_FN unsigned int mx_rng_u32(MXRng *r) {
  if (r->pos == r->end) mx_rng_refill(r);
  return r->w[r->pos++];
}

// A word as a double, exactly, through signed 32-bit conversions (which
// vectorize on every x86 level, unlike unsigned or 64-bit ones).
MX_RNG_VEC double mx_rng_word(unsigned int w) {
  return (double)(int)(w >> 16) * 65536.0 + (double)(int)(w & 0xffffu);
}

// [0, 1) with 53 bits from two words: (hi 2^21 + lo / 2^11) 2^-53, exact.
MX_RNG_VEC double mx_rng_u53(unsigned int hi, unsigned int lo) {
  return (mx_rng_word(hi) * 2097152.0 + (double)(int)(lo >> 11)) * (1.0 / 9007199254740992.0);
}

// Uniform on [0, 1) with 53 random bits.
MX_RNG_FN double mx_rng_uniform(MXRng *r) {
  const unsigned int hi = mx_rng_u32(r), lo = mx_rng_u32(r);
  return mx_rng_u53(hi, lo);
}

// Uniform on (0, 1) with 32 random bits: (w + 1/2) 2^-32.
MX_RNG_VEC double mx_rng_u32_open(unsigned int w) {
  return (mx_rng_word(w) + 0.5) * 2.3283064365386963e-10;
}
MX_RNG_FN double mx_rng_u32_double(MXRng *r) { return mx_rng_u32_open(mx_rng_u32(r)); }

// Uniform on (0, 1]: safe under log.
MX_RNG_FN double mx_rng_open(MXRng *r) { return 1.0 - mx_rng_uniform(r); }

// --- double maths without libm --------------------------------------------
// Branch-free (a vectorizing loop's body, the float ones below likewise),
// from fdlibm's kernels (Sun Microsystems, 1993: freely usable).  Error on
// the samplers' arguments (tests/test_random_math.py records it): log and
// exp within 1 ulp, cos/sin of 2 pi u within 2 ulp.

// log(x) for a normal double x > 0: x = m 2^e with m in [sqrt(1/2),
// sqrt(2)), f = m - 1 exact, log(1 + f) = 2 atanh(s), s = f / (2 + f), by
// fdlibm's minimax series in s^2; e ln 2 added in two parts.
MX_RNG_VEC double mx_rng_log(double x) {
  const unsigned long long bits = MX_D2U(x), frac = bits & 0x000fffffffffffffull;
  const int low = frac < 0x6a09e667f3bcdull;       // significand 1.frac < sqrt(2): m >= 1
  const double e = (double)((int)(bits >> 52) - 1022 - low);
  const double f = MX_U2D(frac | (low ? 0x3ff0000000000000ull : 0x3fe0000000000000ull)) - 1.0;
  const double s = f / (2.0 + f), z = s * s, w = z * z;
  const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 +
                                                         w * 1.531383769920937332e-01));
  const double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 +
                    w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  const double hfsq = 0.5 * f * f;
  return e * 6.93147180369123816490e-01 -
         ((hfsq - (s * (hfsq + t1 + t2) + e * 1.90821492927058770002e-10)) - f);
}

// exp(y) for y <= 709 (to 0 below -1400): y = k ln 2 + r, |r| <= ln 2 / 2,
// exp(r) by fdlibm's rational form, 2^k applied in two halves so that a
// subnormal result rounds once instead of flushing.
MX_RNG_VEC double mx_rng_exp(double y) {
  y = y < -1400.0 ? -1400.0 : (y > 709.0 ? 709.0 : y);
  const int k = (int)floor(y * 1.44269504088896338700e+00 + 0.5);
  const double hi = y - k * 6.93147180369123816490e-01, lo = k * 1.90821492927058770002e-10;
  const double r = hi - lo, z = r * r;
  const double c = r - z * (1.66666666666666019037e-01 + z * (-2.77777777770155933842e-03 +
                   z * (6.61375632143793436117e-05 + z * (-1.65339022054652515390e-06 +
                   z * 4.13813679705723846039e-08))));
  const double er = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  const int k1 = k >> 1, k2 = k - k1;               // each >= -1010: normal scales
  return er * MX_U2D((unsigned long long)(long long)(k1 + 1023) << 52) *
         MX_U2D((unsigned long long)(long long)(k2 + 1023) << 52);
}

// fdlibm's sin and cos kernels on |t| <= pi/4, z = t^2.
MX_RNG_VEC double mx_rng_sin_kernel(double t, double z) {
  return t + t * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +
         z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +
         z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
}
MX_RNG_VEC double mx_rng_cos_kernel(double z) {
  const double r = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +
                   z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +
                   z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  const double hz = 0.5 * z, w = 1.0 - hz;
  return w + (((1.0 - w) - hz) + z * r);
}

// cos(2 pi u) and sin(2 pi u) for u in [0, 1) on a 2^-53 grid: the quarter
// turn q = round(4u) comes from u itself (u - q/4 is exact), the kernels on
// the rest, then the rotation by q quarter turns.
MX_RNG_VEC void mx_rng_sincos2pi(double u, double *c, double *s) {
  const int q = (int)(u * 4.0 + 0.5);
  const double t = (u - (double)q * 0.25) * 6.283185307179586, z = t * t;
  const double sn = mx_rng_sin_kernel(t, z), cs = mx_rng_cos_kernel(z);
  const double c0 = (q & 1) ? sn : cs, s0 = (q & 1) ? cs : sn;
  *c = ((q + 1) & 2) ? -c0 : c0;      // quarter turns 1, 2: cos < 0
  *s = (q & 2) ? -s0 : s0;            // quarter turns 2, 3: sin < 0
}

MX_RNG_VEC double mx_rng_cos2pi(double u) {
  const int q = (int)(u * 4.0 + 0.5);
  const double t = (u - (double)q * 0.25) * 6.283185307179586, z = t * t;
  const double c0 = (q & 1) ? mx_rng_sin_kernel(t, z) : mx_rng_cos_kernel(z);
  return ((q + 1) & 2) ? -c0 : c0;
}

// --- the per-element samplers ------------------------------------------------

MX_RNG_FN double mx_rng_normal(MXRng *r) {
  const double u1 = mx_rng_open(r), u2 = mx_rng_uniform(r);
  return sqrt(-2.0 * mx_rng_log(u1)) * mx_rng_cos2pi(u2);
}

// Gamma(alpha, 1), alpha > 0: Marsaglia and Tsang, "A simple method for
// generating gamma variables" (ACM TOMS 26(3), 2000).  mx_gamma_first is
// its first attempt, which a CPU loop vectorizes: keep the two in step.
MX_RNG_FN double mx_rng_gamma(MXRng *r, double alpha) {
  double boost = 1.0;
  if (alpha < 1.0) {
    // Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha).
    boost = mx_rng_exp(mx_rng_log(mx_rng_open(r)) / alpha);
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
    if (u < 1.0 - 0.0331 * x2 * x2 ||
        mx_rng_log(u) < 0.5 * x2 + d * (1.0 - v + mx_rng_log(v)))
      return boost * d * v;
  }
}

// mx_rng_gamma's first attempt from the first 8 words of its stream, word j
// at w[j * stride] (the boost's uniform, when Small = alpha < 1, then the
// normal's two and the uniform), branch-free: *g is its value, the result
// 1 where it accepts, else 0 (the caller then runs mx_rng_gamma).
template <bool Small>
MX_RNG_VEC int mx_gamma_first(const unsigned int *w, long long stride, double alpha,
                              double *g) {
  const int o = Small ? 2 : 0;
#define MX_W(j) w[(o + (j)) * stride]
  double boost = 1.0;
  if (Small) {
    boost = mx_rng_exp(mx_rng_log(1.0 - mx_rng_u53(w[0], w[stride])) / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0, cc = 1.0 / sqrt(9.0 * d);
  const double x = sqrt(-2.0 * mx_rng_log(1.0 - mx_rng_u53(MX_W(0), MX_W(1)))) *
                   mx_rng_cos2pi(mx_rng_u53(MX_W(2), MX_W(3)));
  double v = 1.0 + cc * x;
  const int positive = v > 0.0;
  v = v * v * v;
  const double u = 1.0 - mx_rng_u53(MX_W(4), MX_W(5)), x2 = x * x;
#undef MX_W
  *g = boost * d * v;
  return positive & ((u < 1.0 - 0.0331 * x2 * x2) |
                     (mx_rng_log(u) < 0.5 * x2 + d * (1.0 - v + mx_rng_log(v))));
}

// One step of the Poisson(lam) CDF: term k (*p) and the sum through it
// (*cdf) from those of k - 1.  Shared by the search and the CPU's table, so
// both see the same sums.
MX_RNG_FN void mx_poisson_step(double lam, double k, double *p, double *cdf) {
  *p = *p * lam / k;
  *cdf += *p;
}

// Poisson(lam), lam >= 0.
#define MX_POISSON_SEARCH_BELOW 10.0     // the inverse CDF below this mean, PTRS from it
MX_RNG_FN double mx_rng_poisson(MXRng *r, double lam) {
  if (lam < MX_POISSON_SEARCH_BELOW) {
    // Inverse CDF: the first k whose CDF passes a 32-bit uniform (one
    // word; a probability moves by at most 2^-32).  The terms cannot
    // vanish before the sum passes 1 - 2^-33 for such lam; p > 0 guards.
    const double u = mx_rng_u32_double(r);
    double p = exp(-lam), cdf = p, k = 0.0;
    while (u >= cdf && p > 0.0) {
      k += 1.0;
      mx_poisson_step(lam, k, &p, &cdf);
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

// --- the direct layout -------------------------------------------------------

// log(x) for a normal float x > 0, branch-free (a vectorizing loop's body):
// Cephes' logf, x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln(m) by its
// degree-9 polynomial in m - 1, e ln 2 added in two parts.  m and e come
// from x's bits with integer selects only: GCC keeps a float operation
// under a condition a branch (it may trap), and a branch does not vectorize.
MX_RNG_VEC float mx_rng_logf(float x) {
  const unsigned int bits = MX_F2U(x), frac = bits & 0x007fffffu;
  const int low = frac < 0x3504f3u;                // significand 1.frac < sqrt(2): m >= 1
  const float e = (float)((int)(bits >> 23) - 126 - low);
  const float m = MX_U2F(frac | (low ? 0x3f800000u : 0x3f000000u)) - 1.0f;   // m - 1, exact
  const float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  return m + y + 0.693359375f * e;
}

// cos(2 pi u) and sin(2 pi u) for u in [0, 1) on a 2^-24 grid, branch-free:
// the quarter turn q = round(4u) comes from u itself (u - q/4 is exact),
// Cephes' sinf/cosf polynomials on the rest (within [-pi/4, pi/4]), then the
// rotation by q quarter turns.
MX_RNG_VEC void mx_rng_sincos2pi(float u, float *c, float *s) {
  const int q = (int)(u * 4.0f + 0.5f);
  const float t = (u - (float)q * 0.25f) * 6.28318530717958648f, z = t * t;
  const float sn = ((-1.9515295891E-4f * z + 8.3321608736E-3f) * z - 1.6666654611E-1f) * z * t + t;
  const float cs = ((2.443315711809948E-5f * z - 1.388731625493765E-3f) * z +
                    4.166664568298827E-2f) * z * z - 0.5f * z + 1.0f;
  const float c0 = (q & 1) ? sn : cs, s0 = (q & 1) ? cs : sn;
  *c = ((q + 1) & 2) ? -c0 : c0;      // quarter turns 1, 2: cos < 0
  *s = (q & 2) ? -s0 : s0;            // quarter turns 2, 3: sin < 0
}

// Uniforms from one 32-bit word: [0, 1) on a 2^-24 grid, and (0, 1] with
// 31 bits (tails of log(u) to 2^-32, beyond 6.6 sigma for the normal).
MX_RNG_VEC float mx_rng_u24(unsigned int w) { return (float)(int)(w >> 8) * 5.9604644775390625e-8f; }
MX_RNG_VEC float mx_rng_u31_open(unsigned int w) {
  return (float)(int)(w >> 1) * 4.656612873077393e-10f + 2.3283064365386963e-10f;
}

// The 4 float standard variates of block c (uniform on [0, 1), N(0, 1) or
// Exp(1)).  dist is a constant where a CPU loop inlines it.
MX_RNG_VEC void mx_direct_block(int dist, unsigned long long seed, unsigned long long c,
                               float *z) {
  unsigned int w[4];
  mx_philox(seed, c, 0, w);
  if (dist == MX_DIST_NORMAL) {
    for (int h = 0; h < 2; ++h) {
      const float r = sqrtf(-2.0f * mx_rng_logf(mx_rng_u31_open(w[2 * h])));
      float cs, sn;
      mx_rng_sincos2pi(mx_rng_u24(w[2 * h + 1]), &cs, &sn);
      z[2 * h] = r * cs;
      z[2 * h + 1] = r * sn;
    }
  } else if (dist == MX_DIST_EXPONENTIAL) {
    for (int e = 0; e < 4; ++e) z[e] = -mx_rng_logf(mx_rng_u31_open(w[e]));
  } else {
    for (int e = 0; e < 4; ++e) z[e] = mx_rng_u24(w[e]);
  }
}

// The 2 double standard variates of block c, 53-bit uniforms.
MX_RNG_VEC void mx_direct_block(int dist, unsigned long long seed, unsigned long long c,
                               double *z) {
  unsigned int w[4];
  mx_philox(seed, c, 0, w);
  const double u0 = mx_rng_u53(w[0], w[1]), u1 = mx_rng_u53(w[2], w[3]);
  if (dist == MX_DIST_NORMAL) {
    const double r = sqrt(-2.0 * mx_rng_log(1.0 - u0));
    double cs, sn;
    mx_rng_sincos2pi(u1, &cs, &sn);
    z[0] = r * cs;
    z[1] = r * sn;
  } else if (dist == MX_DIST_EXPONENTIAL) {
    z[0] = -mx_rng_log(1.0 - u0);
    z[1] = -mx_rng_log(1.0 - u1);
  } else {
    z[0] = u0;
    z[1] = u1;
  }
}

MX_RNG_FN float mx_rng_below(float x, float toward) { return nextafterf(x, toward); }
MX_RNG_FN double mx_rng_below(double x, double toward) { return nextafter(x, toward); }

// An element of a direct distribution with parameters (a, b) from its
// standard variate z, formed in double and rounded to the compute type C;
// a uniform that rounds up to b becomes the largest C below it.
template <typename C>
MX_RNG_FN C mx_direct_value(int dist, double a, double b, C z) {
  switch (dist) {
    case MX_DIST_UNIFORM: {
      if (!(a < b)) return (C)mx_rng_nan();
      const double span = b - a, u = z;
      C r = (C)(span <= 1.79769313486231570815e308 ? a + span * u : (1.0 - u) * a + u * b);
      if (r >= (C)b) r = mx_rng_below((C)b, (C)a);
      return r < (C)a ? (C)a : r;
    }
    case MX_DIST_NORMAL:
      return b >= 0.0 ? (C)(a + b * (double)z) : (C)mx_rng_nan();
    case MX_DIST_EXPONENTIAL:
      return a > 0.0 ? (C)((double)z / a) : (C)mx_rng_nan();
    default:
      return (C)mx_rng_nan();
  }
}

// Whether dist draws in the direct layout.
MX_RNG_FN bool mx_direct_dist(int dist) {
  return dist == MX_DIST_UNIFORM || dist == MX_DIST_NORMAL || dist == MX_DIST_EXPONENTIAL;
}

// One draw of a per-element distribution dist with parameters (a, b), in
// double.
MX_RNG_FN double mx_sample(int dist, double a, double b, MXRng *r) {
  switch (dist) {
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
// sum to one) for the uniform u (the float64 direct layout's): the first
// index whose running sum passes u, else the last index with a positive
// probability (rounding of the sum).
template <typename P>
MX_RNG_FN long long mx_multinomial(const P *p, long long k, double u) {
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
