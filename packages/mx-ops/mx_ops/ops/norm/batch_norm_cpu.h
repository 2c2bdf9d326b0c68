// BatchNorm forward and backward on the CPU, after MXNet's CPU kernel
// (src/operator/nn/batch_norm.cc) with two changes: the per-channel sums run
// in double over a fixed block partition (accurate for large batches and
// independent of the thread count), and the moving statistics are updated
// by the forward pass, as MXNet's MKL-DNN and cuDNN paths do (its plain CPU
// kernel updates them in the backward pass, so a forward-only training call
// there leaves them unchanged).
//
// The data is seen as (outer, C, inner) around the channel axis.
//   training:  mean = E[x], var = E[(x - mean)^2] (biased), invstd = 1/sqrt(var + eps)
//              moving_mean = moving_mean * momentum + mean * (1 - momentum), same for var
//   inference: mean = moving_mean, invstd = 1/sqrt(moving_var + eps)
//   y = (x - mean) * invstd * gamma + beta        (gamma = 1 with fix_gamma)
// Outputs (output, mean, var): like MXNet, 'var' holds the inverse standard
// deviation, which is what the backward pass reads.
// BatchNorm_v1 (v1 set; MXNet's legacy batch_norm_v1-inl.h) differs in
// three points: 'var' holds the variance (in inference: moving_var, and
// 'mean' moving_mean), the forward leaves the moving statistics alone, and
// the training backward updates them from the saved mean and variance.
// Backward inputs (out_grad, mean, var, data, gamma, beta, moving_mean,
// moving_var), outputs (data_grad, gamma_grad, beta_grad); with
// sg = sum(dy), dotp = sum((x - mean) * dy) per channel and N items:
//   training:  dx = (dy - sg/N - (x - mean) * dotp * invstd^2 / N) * invstd * gamma
//   inference: dx = dy * invstd * gamma
//   dgamma = dotp * invstd (0 with fix_gamma), dbeta = sg.
#ifndef MX_OPS_BATCH_NORM_CPU_H_
#define MX_OPS_BATCH_NORM_CPU_H_

#include <cmath>
#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.norm.batch_norm (BatchNormParam).
struct BatchNormParam {
  int64_t outer, chans, inner;
  double eps, momentum;
  int32_t fix_gamma, use_global_stats;
  int32_t v1;        // BatchNorm_v1 (see below)
  int32_t reserved;
};

// Rows of the outer dimension are folded in at most this many blocks; each
// (block, channel) sum is one work item.  Python's workspace size agrees.
constexpr int64_t kBnMaxBlocks = 64;
// The workspace holds kBnWorkspaceVectors per-channel vectors of doubles,
// then kBnMaxBlocks * 2 partial sums per channel.
constexpr int64_t kBnWorkspaceVectors = 10;
// Below this inner length a work item is a block of whole rows (all
// channels), so that channels-last data is read contiguously.
constexpr int64_t kBnContiguousInner = 16;

// The statistics type: float for float16 and float32 data, as MXNet's AccReal.
template <typename T> struct BnParamType { typedef float type; };
template <> struct BnParamType<double> { typedef double type; };

// One contiguous run of channel c: an OpenMP simd reduction, whose vector
// lanes (fixed at compile time) break the chain of dependent additions.
// f comes by value so that its captured pointers live in registers, and
// returns its values so that nothing in the loop needs an address.
struct BnPair { double v0, v1; };

template <typename F>
static inline void bn_run(F f, int64_t c, int64_t base, int64_t n, double *a0, double *a1) {
  double s0 = 0, s1 = 0;
#pragma omp simd reduction(+ : s0, s1)
  for (int64_t i = 0; i < n; ++i) {
    const BnPair v = f(c, base + i);
    s0 += v.v0;
    s1 += v.v1;
  }
  *a0 += s0;
  if (a1) *a1 += s1;
}

// sums[c * K + k] = sum over channel c's items of v.vk, where f(c, index)
// returns v (v1 only used for K = 2) for one item, in double.  Blocks of rows
// are summed in parallel into `partial` (kBnMaxBlocks * C * K doubles), then
// folded in block order, so the result depends on the shape alone.
template <int K, typename F>
static void bn_channel_sums(const BatchNormParam &p, double *partial, double *sums, F f) {
  static_assert(K == 1 || K == 2, "one or two sums per channel");
  const int64_t C = p.chans, inner = p.inner, outer = p.outer;
  const int64_t nb = outer < kBnMaxBlocks ? (outer > 0 ? outer : 1) : kBnMaxBlocks;
  const int64_t rows = (outer + nb - 1) / nb;
  auto run = [f, inner](int64_t c, int64_t base, double *acc) {
    bn_run(f, c, base, inner, acc, K == 2 ? acc + 1 : nullptr);
  };
  if (inner >= kBnContiguousInner) {
    parallel_for_cost(nb * C, rows * inner, [&](int64_t b0, int64_t e0) {
      for (int64_t it = b0; it < e0; ++it) {
        const int64_t b = it / C, c = it % C;
        double *acc = partial + it * K;
        for (int k = 0; k < K; ++k) acc[k] = 0;
        const int64_t r1 = (b + 1) * rows < outer ? (b + 1) * rows : outer;
        for (int64_t r = b * rows; r < r1; ++r) run(c, (r * C + c) * inner, acc);
      }
    });
  } else if (inner == 1) {
    // Channels last: a row is one value per channel, summed lane-wise.
    parallel_for_cost(nb, rows * C, [&](int64_t b0, int64_t e0) {
      for (int64_t b = b0; b < e0; ++b) {
        double *acc = partial + b * C * K;
        for (int64_t k = 0; k < C * K; ++k) acc[k] = 0;
        const int64_t r1 = (b + 1) * rows < outer ? (b + 1) * rows : outer;
        for (int64_t r = b * rows; r < r1; ++r) {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) {
            const BnPair v = f(c, r * C + c);
            acc[c * K] += v.v0;
            if (K == 2) acc[c * K + 1] += v.v1;
          }
        }
      }
    });
  } else {
    parallel_for_cost(nb, rows * C * inner, [&](int64_t b0, int64_t e0) {
      for (int64_t b = b0; b < e0; ++b) {
        double *acc = partial + b * C * K;
        for (int64_t k = 0; k < C * K; ++k) acc[k] = 0;
        const int64_t r1 = (b + 1) * rows < outer ? (b + 1) * rows : outer;
        for (int64_t r = b * rows; r < r1; ++r)
          for (int64_t c = 0; c < C; ++c) run(c, (r * C + c) * inner, acc + c * K);
      }
    });
  }
  for (int64_t ck = 0; ck < C * K; ++ck) {
    double s = 0;
    for (int64_t b = 0; b < nb; ++b) s += partial[b * C * K + ck];
    sums[ck] = s;
  }
}

template <bool ADD, typename P>
static void bn_store_vec(P *out, const double *v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) nn_store<ADD>(out, i, P(v[i]));
}

// out[i] = (x[i] - mean[c]) * scale[c] + shift[c] over the (outer, C, inner) view.
template <bool ADD, typename T>
static void bn_affine(const BatchNormParam &p, const T *x, T *y, const double *mean,
                      const double *scale, const double *shift) {
  typedef typename NnAcc<T>::type A;
  const int64_t C = p.chans, inner = p.inner;
  parallel_for_cost(p.outer * C, inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t c = r % C;
      const A m = A(mean[c]), s = A(scale[c]), t = A(shift[c]);
      for (int64_t i = r * inner; i < (r + 1) * inner; ++i)
        nn_store<ADD>(y, i, A((A(x[i]) - m) * s + t));
    }
  });
}

template <typename T>
static int bn_forward_typed(MXOpCall *c) {
  typedef typename BnParamType<T>::type P;
  const BatchNormParam &p = *static_cast<const BatchNormParam *>(c->params);
  const int64_t C = p.chans, count = p.outer * p.inner;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  const P *gamma = static_cast<const P *>(c->inputs[1].dptr);
  const P *beta = static_cast<const P *>(c->inputs[2].dptr);
  P *moving_mean = static_cast<P *>(c->inputs[3].dptr);
  P *moving_var = static_cast<P *>(c->inputs[4].dptr);
  // Workspace: mean, invstd, scale, shift, saved (C doubles each), then the
  // partial sums.
  double *mean = static_cast<double *>(c->workspace);
  double *invstd = mean + C, *scale = mean + 2 * C, *shift = mean + 3 * C;
  double *saved = mean + 4 * C;           // BatchNorm_v1's 'var' output
  double *partial = mean + kBnWorkspaceVectors * C;
  const bool batch_stats = c->is_train && !p.use_global_stats;
  if (batch_stats) {
    bn_channel_sums<1>(p, partial, mean,
                       [x](int64_t, int64_t i) { return BnPair{double(x[i]), 0.0}; });
    for (int64_t ch = 0; ch < C; ++ch) mean[ch] = count ? mean[ch] / double(count) : 0.0;
    bn_channel_sums<1>(p, partial, invstd, [x, mean](int64_t ch, int64_t i) {
      const double d = double(x[i]) - mean[ch];
      return BnPair{d * d, 0.0};
    });
    for (int64_t ch = 0; ch < C; ++ch) {
      const double sum = invstd[ch], var = count ? sum / double(count) : 0.0;
      // MXNet's guard: a constant channel with eps 0 gets invstd 0, not inf.
      invstd[ch] = (sum == 0 && p.eps == 0) ? 0.0 : 1.0 / std::sqrt(var + p.eps);
      if (p.v1) {
        saved[ch] = var;
      } else if (count) {
        moving_mean[ch] = P(double(moving_mean[ch]) * p.momentum + mean[ch] * (1 - p.momentum));
        moving_var[ch] = P(double(moving_var[ch]) * p.momentum + var * (1 - p.momentum));
      }
    }
  } else {
    for (int64_t ch = 0; ch < C; ++ch) {
      mean[ch] = double(moving_mean[ch]);
      invstd[ch] = 1.0 / std::sqrt(double(moving_var[ch]) + p.eps);
      saved[ch] = double(moving_var[ch]);
    }
  }
  for (int64_t ch = 0; ch < C; ++ch) {
    scale[ch] = invstd[ch] * (p.fix_gamma ? 1.0 : double(gamma[ch]));
    shift[ch] = double(beta[ch]);
  }
  MX_REQ_DISPATCH(c->req[0], (bn_affine<ADD, T>(p, x, static_cast<T *>(c->outputs[0].dptr),
                                                 mean, scale, shift)));
  MX_REQ_DISPATCH(c->req[1], (bn_store_vec<ADD, P>(static_cast<P *>(c->outputs[1].dptr),
                                                    mean, C)));
  MX_REQ_DISPATCH(c->req[2], (bn_store_vec<ADD, P>(static_cast<P *>(c->outputs[2].dptr),
                                                    p.v1 ? saved : invstd, C)));
  return 0;
}

// dx[i] = (dy[i] - k0[c] - (x[i] - mean[c]) * k1[c]) * k2[c].
template <bool ADD, typename T>
static void bn_dx(const BatchNormParam &p, const T *dy, const T *x, T *dx, const double *mean,
                  const double *k0, const double *k1, const double *k2) {
  typedef typename NnAcc<T>::type A;
  const int64_t C = p.chans, inner = p.inner;
  parallel_for_cost(p.outer * C, inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t c = r % C;
      const A m = A(mean[c]), a0 = A(k0[c]), a1 = A(k1[c]), a2 = A(k2[c]);
      for (int64_t i = r * inner; i < (r + 1) * inner; ++i)
        nn_store<ADD>(dx, i, A((A(dy[i]) - a0 - (A(x[i]) - m) * a1) * a2));
    }
  });
}

template <typename T>
static int bn_backward_typed(MXOpCall *c) {
  typedef typename BnParamType<T>::type P;
  const BatchNormParam &p = *static_cast<const BatchNormParam *>(c->params);
  const int64_t C = p.chans, count = p.outer * p.inner;
  const T *dy = static_cast<const T *>(c->inputs[0].dptr);
  const P *saved_mean = static_cast<const P *>(c->inputs[1].dptr);
  const P *saved_invstd = static_cast<const P *>(c->inputs[2].dptr);
  const T *x = static_cast<const T *>(c->inputs[3].dptr);
  const P *gamma = static_cast<const P *>(c->inputs[4].dptr);
  const P *moving_mean = static_cast<const P *>(c->inputs[6].dptr);
  const P *moving_var = static_cast<const P *>(c->inputs[7].dptr);
  // Workspace: mean, invstd, the two sums per channel, k0, k1, k2, dgamma,
  // dbeta, dev (C doubles each but the sums), then the partial sums.
  double *mean = static_cast<double *>(c->workspace);
  double *invstd = mean + C, *sums = mean + 2 * C, *k0 = mean + 4 * C, *k1 = mean + 5 * C;
  double *k2 = mean + 6 * C, *dg = mean + 7 * C, *db = mean + 8 * C;
  double *partial = mean + kBnWorkspaceVectors * C;
  const bool batch_stats = c->is_train && !p.use_global_stats;
  for (int64_t ch = 0; ch < C; ++ch) {
    mean[ch] = double(batch_stats ? saved_mean[ch] : moving_mean[ch]);
    // BatchNorm_v1 saved the variance; BatchNorm the inverse std.
    const double sv = double(saved_invstd[ch]);
    invstd[ch] = !batch_stats ? 1.0 / std::sqrt(double(moving_var[ch]) + p.eps)
                 : p.v1 ? 1.0 / std::sqrt(sv + p.eps) : sv;
  }
  if (p.v1 && batch_stats && count) {
    // BatchNorm_v1 moves its moving statistics in the backward pass.
    P *mm = static_cast<P *>(c->inputs[6].dptr), *mv = static_cast<P *>(c->inputs[7].dptr);
    for (int64_t ch = 0; ch < C; ++ch) {
      mm[ch] = P(double(mm[ch]) * p.momentum + double(saved_mean[ch]) * (1 - p.momentum));
      mv[ch] = P(double(mv[ch]) * p.momentum + double(saved_invstd[ch]) * (1 - p.momentum));
    }
  }
  bn_channel_sums<2>(p, partial, sums, [dy, x, mean](int64_t ch, int64_t i) {
    const double g = double(dy[i]);
    return BnPair{g, (double(x[i]) - mean[ch]) * g};
  });
  const double n = count ? double(count) : 1.0;
  // BatchNorm_v1 differentiates through a mean that need not be the data's
  // (after an inference forward it is moving_mean): its gradient keeps the
  // term in dev = sum(x - mean), zero for the batch's own mean.
  double *dev = mean + 9 * C;
  const bool v1_dev = p.v1 && batch_stats;
  if (v1_dev)
    bn_channel_sums<1>(p, partial, dev, [x, mean](int64_t ch, int64_t i) {
      return BnPair{double(x[i]) - mean[ch], 0.0};
    });
  for (int64_t ch = 0; ch < C; ++ch) {
    const double w = p.fix_gamma ? 1.0 : double(gamma[ch]);
    const double sg = sums[2 * ch], dotp = sums[2 * ch + 1], is = invstd[ch];
    k0[ch] = batch_stats ? sg / n - (v1_dev ? dotp * is * is * dev[ch] / (n * n) : 0.0) : 0.0;
    k1[ch] = batch_stats ? dotp * is * is / n : 0.0;
    k2[ch] = is * w;
    dg[ch] = p.fix_gamma ? 0.0 : dotp * is;
    db[ch] = sg;
  }
  MX_REQ_DISPATCH(c->req[0], (bn_dx<ADD, T>(p, dy, x, static_cast<T *>(c->outputs[0].dptr),
                                             mean, k0, k1, k2)));
  MX_REQ_DISPATCH(c->req[1], (bn_store_vec<ADD, P>(static_cast<P *>(c->outputs[1].dptr),
                                                    dg, C)));
  MX_REQ_DISPATCH(c->req[2], (bn_store_vec<ADD, P>(static_cast<P *>(c->outputs[2].dptr),
                                                    db, C)));
  return 0;
}

// Inputs (data, gamma, beta, moving_mean, moving_var); outputs (output, mean, var).
static int batch_norm_forward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return bn_forward_typed<T>(c));
  return 0;
}

// Inputs (out_grad, mean, var, data, gamma, beta, moving_mean, moving_var);
// outputs (data_grad, gamma_grad, beta_grad).
static int batch_norm_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return bn_backward_typed<T>(c));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_BATCH_NORM_CPU_H_
