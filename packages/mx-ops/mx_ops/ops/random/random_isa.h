// One instruction set's copy of the direct layout's block loop (random_cpu.h
// includes this file once per instruction set inside `#pragma GCC target`
// regions, with MX_RAND_NS naming the namespace; see src/isa.h).  No include
// guard on purpose.
//
// Philox and the transforms of samplers.h are branch-free, so these loops
// vectorize: 8 or 16 blocks per instruction (float), 4 or 8 (double).

namespace mxop {
namespace MX_RAND_NS {

template <int D, typename C>
static void direct_blocks_of(unsigned long long seed, unsigned long long c, int64_t nb, C *z) {
  constexpr int E = sizeof(C) == 4 ? 4 : 2;
#pragma omp simd
  for (int64_t k = 0; k < nb; ++k) mx_direct_block(D, seed, c + uint64_t(k), z + E * k);
}

// z[0, E nb) = the standard variates of blocks c .. c + nb - 1.
template <typename C>
static void direct_blocks(int dist, unsigned long long seed, unsigned long long c, int64_t nb,
                          C *z) {
  switch (dist) {
    case MX_DIST_NORMAL: return direct_blocks_of<MX_DIST_NORMAL>(seed, c, nb, z);
    case MX_DIST_EXPONENTIAL: return direct_blocks_of<MX_DIST_EXPONENTIAL>(seed, c, nb, z);
    default: return direct_blocks_of<MX_DIST_UNIFORM>(seed, c, nb, z);
  }
}

// Blocks 0 .. MX_RNG_PREFETCH-1 of the per-element streams of counters
// c + e, e in [0, m <= kAheadChunk): word j of stream e at
// w[j * kAheadChunk + e] (stores of neighbouring streams are contiguous).
static void stream_ahead(unsigned long long seed, unsigned long long c, int64_t m,
                         unsigned int *w) {
#pragma omp simd
  for (int64_t e = 0; e < m; ++e) {
    static_assert(MX_RNG_PREFETCH == 2, "two blocks ahead");
    const MXBlock b0 = mx_philox_block(seed, c + uint64_t(e), 0);
    const MXBlock b1 = mx_philox_block(seed, c + uint64_t(e), 1);
    unsigned int *x = w + e;
    x[0 * kAheadChunk] = b0.w0;
    x[1 * kAheadChunk] = b0.w1;
    x[2 * kAheadChunk] = b0.w2;
    x[3 * kAheadChunk] = b0.w3;
    x[4 * kAheadChunk] = b1.w0;
    x[5 * kAheadChunk] = b1.w1;
    x[6 * kAheadChunk] = b1.w2;
    x[7 * kAheadChunk] = b1.w3;
  }
}

// g[e], e in [0, m): mx_rng_gamma(alpha[e]) (alpha > 0) of the
// per-element stream c + e, whose first MX_RNG_PREFETCH blocks w holds
// (stream_ahead's layout).  The first attempt runs vectorized
// (mx_gamma_first: a pass for the alphas from 1, one for those below); the
// few elements it does not accept run mx_rng_gamma from the start.
static void gamma_chunk(unsigned long long seed, unsigned long long c, int64_t m,
                        const double *alpha, const unsigned int *w, double *g) {
  static_assert(MX_RNG_PREFETCH * 4 >= 8, "mx_gamma_first reads 8 words");
  const double nan = mx_rng_nan();
  int64_t small = 0;
#pragma omp simd reduction(+ : small)
  for (int64_t e = 0; e < m; ++e) small += alpha[e] < 1.0;
  if (small < m) {
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) {
      double v;
      const int ok = mx_gamma_first<false>(w + e, kAheadChunk, alpha[e], &v);
      g[e] = ok ? v : nan;
    }
  }
  if (small) {
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) {
      double v;
      const int ok = mx_gamma_first<true>(w + e, kAheadChunk, alpha[e], &v);
      g[e] = alpha[e] < 1.0 ? (ok ? v : nan) : g[e];
    }
  }
  for (int64_t e = 0; e < m; ++e) {
    if (g[e] == g[e]) continue;
    MXRng r = mx_rng_ahead(seed, c + uint64_t(e), w + e, kAheadChunk);
    g[e] = mx_rng_gamma(&r, alpha[e]);
  }
}

// count[e] = #{j < K: u[e] >= t[j]}, e in [0, m): with t non-decreasing,
// the first j whose t[j] passes u[e] (K where none does).
static void count_reached(const double *u, int64_t m, const double *t, int64_t K, int *count) {
#pragma omp simd
  for (int64_t e = 0; e < m; ++e) count[e] = 0;
  for (int64_t j = 0; j < K; ++j) {
    const double tj = t[j];
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) count[e] += u[e] >= tj;
  }
}

// u[e], e in [0, m): the 32-bit uniform of the per-element stream c + e
// (mx_rng_u32_double's first).
static void first_uniforms(unsigned long long seed, unsigned long long c, int64_t m, double *u) {
#pragma omp simd
  for (int64_t e = 0; e < m; ++e)
    u[e] = mx_rng_u32_open(mx_philox_block(seed, c + uint64_t(e), 0).w0);
}

}  // namespace MX_RAND_NS
}  // namespace mxop
