// CPU kernels of the distribution samplers (samplers.h draws every value):
//   random_dist         _random_<dist> and _random_<dist>_like: scalar parameters
//   sample_dist         _sample_<dist>: per-element parameters, `per` samples each
//   sample_multinomial  _sample_multinomial, with the log-probabilities (get_prob)
//   multinomial_grad    _backward_sample_multinomial
// Element i is a function of (seed, offset, i) alone (samplers.h's two
// layouts), so the loops split across the pool's threads with the same result
// for any thread count.
#ifndef MX_OPS_RANDOM_CPU_H_
#define MX_OPS_RANDOM_CPU_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "dtype.h"
#include "isa.h"
#include "parallel.h"
#include "samplers.h"

namespace mxop {
// Elements per pass of the per-element layout's loops.
constexpr int64_t kAheadChunk = 256;
}

// The vectorized loops, per instruction set (random_isa.h); the regions set
// no-trapping-math so that GCC if-converts the selects.
#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#pragma GCC optimize("no-trapping-math")
#define MX_RAND_NS rand_avx512
#include "random_isa.h"
#undef MX_RAND_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("no-trapping-math")
#define MX_RAND_NS rand_avx2
#include "random_isa.h"
#undef MX_RAND_NS
#pragma GCC pop_options
#endif

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#define MX_RAND_NS rand_generic
#include "random_isa.h"
#undef MX_RAND_NS
#pragma GCC pop_options

namespace mxop {

// Packed by mx_ops.ops.random.distributions; the MXRandomState follows each.
struct DistParam { int64_t dist; double a, b; };
struct SampleParam { int64_t dist, per; };
struct MultinomialParam { int64_t per; };

// Element-visits one draw is worth when splitting a loop over threads.
constexpr int64_t kDrawCost = 32;
// Elements of the direct layout drawn per pass (a multiple of 4): their
// standard variates sit in a stack buffer between the two loops.
constexpr int64_t kDirectChunk = 1024;

// rand_<isa>::fn(args...) of the best instruction set this CPU has.
#if MX_MULTI_ISA
#define MX_RAND_DISPATCH(fn, ...)                                       \
  switch (cpu_isa()) {                                                  \
    case ISA_AVX512: return rand_avx512::fn(__VA_ARGS__);               \
    case ISA_AVX2: return rand_avx2::fn(__VA_ARGS__);                   \
    default: return rand_generic::fn(__VA_ARGS__);                      \
  }
#else
#define MX_RAND_DISPATCH(fn, ...) return rand_generic::fn(__VA_ARGS__);
#endif

template <typename C>
static inline void direct_blocks(int dist, uint64_t seed, uint64_t c, int64_t nb, C *z) {
  MX_RAND_DISPATCH(direct_blocks, dist, seed, c, nb, z)
}

static inline void stream_ahead(uint64_t seed, uint64_t c, int64_t m, unsigned int *w) {
  MX_RAND_DISPATCH(stream_ahead, seed, c, m, w)
}

static inline void gamma_chunk(uint64_t seed, uint64_t c, int64_t m, const double *alpha,
                               const unsigned int *w, double *g) {
  MX_RAND_DISPATCH(gamma_chunk, seed, c, m, alpha, w, g)
}

static inline void count_reached(const double *u, int64_t m, const double *t, int64_t K,
                                 int *count) {
  MX_RAND_DISPATCH(count_reached, u, m, t, K, count)
}

static inline void first_uniforms(uint64_t seed, uint64_t c, int64_t m, double *u) {
  MX_RAND_DISPATCH(first_uniforms, seed, c, m, u)
}

// out[i] = T(draw(i, r)), i in [0, n), r the stream of element i (its first
// blocks computed ahead for a chunk at once).
template <typename T, typename F>
static void per_element_loop(const MXRandomState &s, T *out, int64_t n, F draw) {
  parallel_for_cost((n + kAheadChunk - 1) / kAheadChunk, kAheadChunk * kDrawCost,
                    [&](int64_t begin, int64_t end) {
    unsigned int w[kAheadChunk * MX_RNG_PREFETCH * 4];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t i0 = chunk * kAheadChunk, m = std::min(kAheadChunk, n - i0);
      stream_ahead(s.seed, s.offset + uint64_t(i0), m, w);
      for (int64_t e = 0; e < m; ++e) {
        MXRng r = mx_rng_ahead(s.seed, s.offset + uint64_t(i0 + e), w + e, kAheadChunk);
        out[i0 + e] = T(draw(i0 + e, &r));
      }
    }
  });
}

// out[i] = T(beta_i * Gamma(alpha_i)), i in [0, n), with param(i, &alpha_i,
// &beta_i): mx_sample's gamma, its first attempts vectorized (gamma_chunk).
template <typename T, typename F>
static void gamma_loop(const MXRandomState &s, T *out, int64_t n, F param) {
  parallel_for_cost((n + kAheadChunk - 1) / kAheadChunk, kAheadChunk * kDrawCost,
                    [&](int64_t begin, int64_t end) {
    unsigned int w[kAheadChunk * MX_RNG_PREFETCH * 4];
    double alpha[kAheadChunk], beta[kAheadChunk], g[kAheadChunk];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t i0 = chunk * kAheadChunk, m = std::min(kAheadChunk, n - i0);
      for (int64_t e = 0; e < m; ++e) {
        param(i0 + e, &alpha[e], &beta[e]);
        if (!(alpha[e] > 0.0 && beta[e] > 0.0)) {     // NaN out; any valid alpha meanwhile
          alpha[e] = 1.0;
          beta[e] = mx_rng_nan();
        }
      }
      stream_ahead(s.seed, s.offset + uint64_t(i0), m, w);
      gamma_chunk(s.seed, s.offset + uint64_t(i0), m, alpha, w, g);
      for (int64_t e = 0; e < m; ++e) out[i0 + e] = T(beta[e] * g[e]);
    }
  });
}

// out[i] = T(Poisson(lam)), i in [0, n), 0 <= lam < MX_POISSON_SEARCH_BELOW: mx_sample's
// inverse CDF, its sums computed once into a table and counted.
template <typename T>
static void poisson_loop(const MXRandomState &s, double lam, T *out, int64_t n) {
  constexpr int kMax = 64;
  double cdf[kMax], p = exp(-lam), k = 0.0;
  cdf[0] = p;
  int K = 1;
  // Up to an entry past every uniform (1 - 2^-33 at most), as the search's.
  while (K < kMax && cdf[K - 1] <= 1.0 - 0x1p-34 && p > 0.0) {
    cdf[K] = cdf[K - 1];
    mx_poisson_step(lam, k += 1.0, &p, &cdf[K]);
    ++K;
  }
  parallel_for_cost((n + kAheadChunk - 1) / kAheadChunk, kAheadChunk * 8,
                    [&](int64_t begin, int64_t end) {
    double u[kAheadChunk];
    int count[kAheadChunk];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t i0 = chunk * kAheadChunk, m = std::min(kAheadChunk, n - i0);
      first_uniforms(s.seed, s.offset + uint64_t(i0), m, u);
      count_reached(u, m, cdf, K, count);
      for (int64_t e = 0; e < m; ++e) {
        if (count[e] < K) {
          out[i0 + e] = T(count[e]);
        } else {      // past the table: the search itself
          MXRng r = mx_rng(s.seed, s.offset + uint64_t(i0 + e));
          out[i0 + e] = T(mx_rng_poisson(&r, lam));
        }
      }
    }
  });
}

// out[i], i in [0, n), of a direct distribution: element i of the layout
// with the parameters of element i / per (a, b of length n / per), or the
// scalars sa, sb where a is null.  C computes: float for float16/float32
// (4 elements per block), double for float64 (2).
template <typename A, typename T>
static void direct_loop(int dist, const MXRandomState &s, const A *a, const A *b, double sa,
                        double sb, int64_t per, T *out, int64_t n) {
  typedef typename std::conditional<std::is_same<T, double>::value, double, float>::type C;
  constexpr int64_t E = sizeof(C) == 4 ? 4 : 2;
  parallel_for_cost((n + kDirectChunk - 1) / kDirectChunk, kDirectChunk * 4,
                    [&](int64_t begin, int64_t end) {
    C z[kDirectChunk];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t i0 = chunk * kDirectChunk, m = std::min(kDirectChunk, n - i0);
      direct_blocks(dist, s.seed, s.offset + uint64_t(i0 / E), (m + E - 1) / E, z);
      if (!a) {
        for (int64_t e = 0; e < m; ++e) out[i0 + e] = T(mx_direct_value(dist, sa, sb, z[e]));
        continue;
      }
      int64_t j = i0 / per, k = i0 - j * per;       // parameters j, sample k of them
      for (int64_t e = 0; e < m; ++e) {
        out[i0 + e] = T(mx_direct_value(dist, double(a[j]), b ? double(b[j]) : 0.0, z[e]));
        if (++k == per) {
          k = 0;
          ++j;
        }
      }
    }
  });
}

// Reads the parameter block and the random state; 1 to draw, 0 to skip,
// -1 for req 'add' (a fresh draw added to old values is no distribution).
template <typename P>
static inline int rng_begin(MXOpCall *c, P *p, MXRandomState *s) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  if (c->req[0] == MX_REQ_ADD) {
    c->error = "req 'add' is not supported by random samplers";
    return -1;
  }
  std::memcpy(p, c->params, sizeof(P));
  *s = mx_random_state(c->params, sizeof(P));
  return 1;
}

#define MX_FLOAT_OUT_SWITCH(DTYPE, T, ...)                                 \
  switch (DTYPE) {                                                        \
    case MX_FLOAT32: { typedef float T; __VA_ARGS__; break; }             \
    case MX_FLOAT64: { typedef double T; __VA_ARGS__; break; }            \
    case MX_FLOAT16: { typedef ::mxop::half_t T; __VA_ARGS__; break; }    \
    default: c->error = "unsupported dtype (float16, float32, float64 only)"; return -1; \
  }

static inline int random_dist(MXOpCall *c) {
  DistParam p;
  MXRandomState s;
  const int go = rng_begin(c, &p, &s);
  if (go <= 0) return go;
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const int dist = int(p.dist);
  MX_FLOAT_OUT_SWITCH(c->outputs[0].dtype, T, {
    T *out = static_cast<T *>(c->outputs[0].dptr);
    if (mx_direct_dist(dist)) {
      direct_loop<double, T>(dist, s, nullptr, nullptr, p.a, p.b, 1, out, n);
    } else if (dist == MX_DIST_GAMMA) {
      gamma_loop(s, out, n, [&](int64_t, double *a, double *b) {
        *a = p.a;
        *b = p.b;
      });
    } else if (dist == MX_DIST_POISSON && p.a >= 0.0 && p.a < MX_POISSON_SEARCH_BELOW) {
      poisson_loop(s, p.a, out, n);
    } else {
      per_element_loop(s, out, n, [&](int64_t, MXRng *r) {
        return mx_sample(dist, p.a, p.b, r);
      });
    }
  });
  return 0;
}

// Output element i draws with the parameters of element i / per.
template <typename A, typename T>
static inline void sample_loop(const SampleParam &p, const MXRandomState &s, const A *a,
                               const A *b, T *out, int64_t n) {
  const int dist = int(p.dist);
  if (mx_direct_dist(dist)) return direct_loop(dist, s, a, b, 0.0, 0.0, p.per, out, n);
  if (dist == MX_DIST_GAMMA)
    return gamma_loop(s, out, n, [&](int64_t i, double *alpha, double *beta) {
      const int64_t j = i / p.per;
      *alpha = double(a[j]);
      *beta = b ? double(b[j]) : 0.0;
    });
  per_element_loop(s, out, n, [&](int64_t i, MXRng *r) {
    const int64_t j = i / p.per;
    return mx_sample(dist, double(a[j]), b ? double(b[j]) : 0.0, r);
  });
}

static inline int sample_dist(MXOpCall *c) {
  SampleParam p;
  MXRandomState s;
  const int go = rng_begin(c, &p, &s);
  if (go <= 0) return go;
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  if (n == 0) return 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, A, {
    const A *a = static_cast<const A *>(c->inputs[0].dptr);
    const A *b = c->nin > 1 ? static_cast<const A *>(c->inputs[1].dptr) : nullptr;
    MX_FLOAT_OUT_SWITCH(c->outputs[0].dtype, T, {
      sample_loop(p, s, a, b, static_cast<T *>(c->outputs[0].dptr), n);
    });
  });
  return 0;
}

// out[e] = mx_multinomial(row, k, u[e]), e in [0, m) (and log p of it in
// logp unless null): the row's running sums computed once into cdf (k
// entries) and searched; the first sum passing u is the count of sums it
// reaches where the probabilities are non-negative (the sums then never
// fall), branch-free over e for a few categories, binary otherwise.
template <typename P, typename T>
static void multinomial_row(const P *row, int64_t k, const double *u, int64_t m, T *out,
                            P *logp, double *cdf) {
  double acc = 0.0;
  int64_t last = 0;
  bool monotone = true;
  for (int64_t j = 0; j < k; ++j) {
    const double pj = mx_rng_double(row[j]);
    if (pj > 0.0) last = j;
    monotone = monotone && pj >= 0.0;
    cdf[j] = acc += pj;
  }
  const auto emit = [&](int64_t e, int64_t j) {
    out[e] = T(j);
    if (logp) logp[e] = P(log(double(row[j])));
  };
  constexpr int64_t kScan = 32;       // categories counted branch-free
  if (monotone && k <= kScan) {
    int count[kDirectChunk];
    count_reached(u, m, cdf, k, count);
    for (int64_t e = 0; e < m; ++e) emit(e, count[e] == k ? last : count[e]);
  } else if (monotone) {
    for (int64_t e = 0; e < m; ++e) {
      const int64_t j = std::upper_bound(cdf, cdf + k, u[e]) - cdf;
      emit(e, j == k ? last : j);       // past every sum: rounding
    }
  } else {
    for (int64_t e = 0; e < m; ++e) emit(e, mx_multinomial(row, k, u[e]));
  }
}

// Output 0: sample i from the distribution of row i / per (the data's last
// axis holds its k probabilities); output 1 (get_prob): log p of it.
static inline int sample_multinomial(MXOpCall *c) {
  MultinomialParam p;
  MXRandomState s;
  const int go = rng_begin(c, &p, &s);
  if (go <= 0) return go;
  const MXTBlob &data = c->inputs[0];
  const int64_t k = data.ndim ? data.shape[data.ndim - 1] : 1;
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool prob = c->nout > 1 && c->req[1] != MX_REQ_NULL;
  if (n == 0 || k == 0) return 0;
  if (prob && c->req[1] == MX_REQ_ADD) {
    c->error = "req 'add' is not supported by random samplers";
    return -1;
  }
  MX_TYPE_SWITCH(data.dtype, P, {
    const P *d = static_cast<const P *>(data.dptr);
    P *logp = prob ? static_cast<P *>(c->outputs[1].dptr) : nullptr;
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, {
      T *out = static_cast<T *>(c->outputs[0].dptr);
      // The uniforms: the float64 direct layout, 2 per block.
      parallel_for_cost((n + kDirectChunk - 1) / kDirectChunk, kDirectChunk * (4 + k),
                        [&](int64_t begin, int64_t end) {
        double u[kDirectChunk];
        std::vector<double> cdf(k);
        for (int64_t chunk = begin; chunk < end; ++chunk) {
          const int64_t i0 = chunk * kDirectChunk, m = std::min(kDirectChunk, n - i0);
          direct_blocks(MX_DIST_UNIFORM, s.seed, s.offset + uint64_t(i0 / 2), (m + 1) / 2, u);
          // The chunk's runs of samples of one row.
          for (int64_t e = 0; e < m;) {
            const int64_t r = (i0 + e) / p.per, len = std::min(m - e, (r + 1) * p.per - i0 - e);
            multinomial_row(d + r * k, k, u + e, len, out + i0 + e, logp ? logp + i0 + e : nullptr,
                            cdf.data());
            e += len;
          }
        }
      });
    });
  });
  return 0;
}

// Inputs: the head gradient of the log-probabilities, the data, the samples.
// d log p[j] / d p[j] = 1 / p[j], summed over the samples of each row.
static inline int multinomial_grad(MXOpCall *c) {
  MultinomialParam p;
  std::memcpy(&p, c->params, sizeof(p));
  const int32_t req = c->req[0];
  if (req == MX_REQ_NULL) return 0;
  const MXTBlob &data = c->inputs[1];
  const int64_t k = data.ndim ? data.shape[data.ndim - 1] : 1;
  const int64_t size = mx_tblob_size(&data), rows = k ? size / k : 0;
  MX_TYPE_SWITCH(data.dtype, P, {
    const P *og = static_cast<const P *>(c->inputs[0].dptr);
    const P *d = static_cast<const P *>(data.dptr);
    P *gd = static_cast<P *>(c->outputs[0].dptr);
    MX_TYPE_SWITCH(c->inputs[2].dtype, T, {
      const T *smp = static_cast<const T *>(c->inputs[2].dptr);
      parallel_for_cost(rows, k + p.per, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          P *g = gd + row * k;
          if (req != MX_REQ_ADD)
            for (int64_t j = 0; j < k; ++j) g[j] = P(0);
          for (int64_t m = row * p.per; m < (row + 1) * p.per; ++m) {
            const int64_t j = int64_t(smp[m]);
            g[j] = P(double(g[j]) + double(og[m]) / double(d[row * k + j]));
          }
        }
      });
    });
  });
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_RANDOM_CPU_H_
