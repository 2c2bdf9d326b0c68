// CPU kernels of the distribution samplers (samplers.h draws every value):
//   random_dist         _random_<dist> and _random_<dist>_like: scalar parameters
//   sample_dist         _sample_<dist>: per-element parameters, `per` samples each
//   sample_multinomial  _sample_multinomial, with the log-probabilities (get_prob)
//   multinomial_grad    _backward_sample_multinomial
// Element i reads only its own sub-stream (seed, offset + i), so the loops
// split across OpenMP threads with the same result for any thread count.
#ifndef MX_OPS_RANDOM_CPU_H_
#define MX_OPS_RANDOM_CPU_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "parallel.h"
#include "samplers.h"

namespace mxop {

// Packed by mx_ops.ops.random.distributions; the MXRandomState follows each.
struct DistParam { int64_t dist; double a, b; };
struct SampleParam { int64_t dist, per; };
struct MultinomialParam { int64_t per; };

// Element-visits one draw is worth when splitting a loop over threads.
constexpr int64_t kDrawCost = 32;

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

static inline int random_dist(MXOpCall *c) {
  DistParam p;
  MXRandomState s;
  const int go = rng_begin(c, &p, &s);
  if (go <= 0) return go;
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, {
    T *out = static_cast<T *>(c->outputs[0].dptr);
    parallel_for_cost(n, kDrawCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        MXRng r = mx_rng(s.seed, s.offset + uint64_t(i));
        out[i] = T(mx_sample(int(p.dist), p.a, p.b, &r));
      }
    });
  });
  return 0;
}

// Output element i draws with the parameters of element i / per.
template <typename A, typename T>
static inline void sample_loop(const SampleParam &p, const MXRandomState &s, const A *a,
                               const A *b, T *out, int64_t n) {
  parallel_for_cost(n, kDrawCost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t j = i / p.per;
      MXRng r = mx_rng(s.seed, s.offset + uint64_t(i));
      out[i] = T(mx_sample(int(p.dist), double(a[j]), b ? double(b[j]) : 0.0, &r));
    }
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
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, {
      sample_loop(p, s, a, b, static_cast<T *>(c->outputs[0].dptr), n);
    });
  });
  return 0;
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
      parallel_for_cost(n, kDrawCost, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const P *row = d + (i / p.per) * k;
          MXRng r = mx_rng(s.seed, s.offset + uint64_t(i));
          const long long j = mx_multinomial(row, k, &r);
          out[i] = T(j);
          if (logp) logp[i] = P(log(double(row[j])));
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
