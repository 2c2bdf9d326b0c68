// The aggregated updates and the norms LARS needs, with MXNet 1.9.1's
// formulas (src/operator/optimizer_op-inl.h, contrib/multi_sum_sq,
// contrib/multi_lars).  g' = rescale_grad*g, clipped when clip_gradient >= 0.
//   multi_sgd_update:      w = w - lr_k*(wd_k*w + g')
//   multi_sgd_mom_update:  mom = momentum*mom - lr_k*wd_k*w - lr_k*g';  w = w + mom
//   multi_mp_*:            the same in float on the float32 weight32 (and momentum),
//                          unless the weights are float32: then weight32 is ignored
//   preloaded_multi_*:     lr_k, wd_k read from the float32 inputs lrs, wds
//   multi_sum_sq:          out[k] = sum of squares of array k (float32 (num_arrays,))
//   multi_lars:            out = lr*eta*|w|/(|g|*rescale_grad + wd*|w| + eps) where
//                          |w| = sqrt(weights_sum_sq) and |g| > 0, else lr
// One call updates every weight: the elements of all arrays form one range
// split across the workers, so ten 1M arrays cost one team, not ten.
#ifndef MX_OPS_MULTI_CPU_H_
#define MX_OPS_MULTI_CPU_H_

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "nn_common.h"
#include "optimizer_cpu.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.optimizer.multi: this block, then (unless preloaded)
// num_weights learning rates and num_weights weight decays as doubles.
struct MultiParam {
  double momentum, rescale_grad, clip_gradient;
  int32_t num_weights, per_weight;   // inputs per weight: 2 to 4
  int32_t has_mom, mp, preloaded, pad_;
};

// Calls body(k, begin, end) for the parts of arrays k = 0..n-1 (sizes[k]
// elements each) that fall in each worker's share of their concatenation.
template <typename F>
static void multi_for(const std::vector<int64_t> &sizes, F body) {
  std::vector<int64_t> start(sizes.size() + 1, 0);
  for (size_t k = 0; k < sizes.size(); ++k) start[k + 1] = start[k] + sizes[k];
  parallel_for(start.back(), [&](int64_t b, int64_t e) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      const int64_t lo = b > start[k] ? b : start[k], hi = e < start[k + 1] ? e : start[k + 1];
      if (lo < hi) body(k, lo - start[k], hi - start[k]);
    }
  });
}

// One weight's elements [b, e).  A: the compute type; M: the momentum's.
template <typename T, bool MOM, bool MP, int STORE>
static void multi_sgd_range(const MultiParam &p, double lr_d, double wd_d, const T *w,
                            const T *g, void *mom_v, float *w32, T *out, int64_t b, int64_t e) {
  typedef typename std::conditional<MP, float, typename NnAcc<T>::type>::type A;
  typedef typename std::conditional<MP, float, T>::type M;
  M *mom = static_cast<M *>(mom_v);
  const A lr = A(lr_d), wd = A(wd_d), momentum = A(p.momentum), rescale = A(p.rescale_grad),
          clip = A(p.clip_gradient);
  const bool clipping = p.clip_gradient >= 0;
  for (int64_t i = b; i < e; ++i) {
    A wv = MP ? A(w32[i]) : A(w[i]);
    A gr = rescale * A(g[i]);
    if (clipping) gr = opt_clip(gr, clip);
    if constexpr (MOM) {
      mom[i] = M(momentum * A(mom[i]) - lr * wd * wv - lr * gr);
      wv = wv + A(mom[i]);
    } else {
      wv = wv - lr * (wd * wv + gr);
    }
    if constexpr (MP) w32[i] = wv;
    if constexpr (STORE == 1) out[i] = T(wv);
    if constexpr (STORE == 2) out[i] = T(A(out[i]) + wv);
  }
}

template <typename T, bool MOM, bool MP>
static void multi_sgd_typed(const MultiParam &p, MXOpCall *c) {
  const int n = p.num_weights, per = p.per_weight;
  const double *rates = reinterpret_cast<const double *>(&p + 1);
  const float *lrs = p.preloaded ? static_cast<const float *>(c->inputs[n * per].dptr) : nullptr;
  const float *wds = p.preloaded ? static_cast<const float *>(c->inputs[n * per + 1].dptr) : nullptr;
  std::vector<int64_t> sizes(n);
  for (int k = 0; k < n; ++k) sizes[k] = mx_tblob_size(&c->inputs[k * per]);
  multi_for(sizes, [&](size_t k, int64_t b, int64_t e) {
    const MXTBlob *in = c->inputs + k * per;
    const T *w = static_cast<const T *>(in[0].dptr), *g = static_cast<const T *>(in[1].dptr);
    void *mom = MOM ? in[2].dptr : nullptr;
    float *w32 = MP ? static_cast<float *>(in[per - 1].dptr) : nullptr;
    T *out = static_cast<T *>(c->outputs[k].dptr);
    const double lr = lrs ? double(lrs[k]) : rates[k], wd = wds ? double(wds[k]) : rates[n + k];
    switch (c->req[k]) {
      case MX_REQ_NULL: multi_sgd_range<T, MOM, MP, 0>(p, lr, wd, w, g, mom, w32, out, b, e); break;
      case MX_REQ_ADD: multi_sgd_range<T, MOM, MP, 2>(p, lr, wd, w, g, mom, w32, out, b, e); break;
      default: multi_sgd_range<T, MOM, MP, 1>(p, lr, wd, w, g, mom, w32, out, b, e);
    }
  });
}

// Inputs per weight (weight, grad[, mom][, weight32]), then lrs and wds when
// preloaded; outputs the num_weights new weights.
static int multi_sgd_update(MXOpCall *c) {
  const MultiParam &p = *static_cast<const MultiParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, {
    // MXNet's MultiSGD is mixed precision only when the weights are not
    // float32: with float32 weights multi_mp_* ignore weight32.
    const bool mp = p.mp && !std::is_same<T, float>::value;
    if (p.has_mom && mp) multi_sgd_typed<T, true, true>(p, c);
    else if (p.has_mom) multi_sgd_typed<T, true, false>(p, c);
    else if (mp) multi_sgd_typed<T, false, true>(p, c);
    else multi_sgd_typed<T, false, false>(p, c);
  });
  return 0;
}

// Elements per partial sum of multi_sum_sq: fixed, so that the result does
// not depend on the number of workers.
constexpr int64_t kSumSqChunk = int64_t(1) << 14;

template <typename T>
static double sum_sq_range(const T *x, int64_t b, int64_t e) {
  typedef typename NnAcc<T>::type A;
  // Eight independent accumulators: the loop vectorizes without
  // reassociating one running sum.
  A acc[8] = {A(0), A(0), A(0), A(0), A(0), A(0), A(0), A(0)};
  int64_t i = b;
  for (; i + 8 <= e; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += A(x[i + j]) * A(x[i + j]);
  double s = 0;
  for (int j = 0; j < 8; ++j) s += double(acc[j]);
  for (; i < e; ++i) s += double(A(x[i])) * double(A(x[i]));
  return s;
}

// Inputs: num_arrays arrays of one float dtype; output float32 (num_arrays,).
static int multi_sum_sq(MXOpCall *c) {
  const int n = c->nin;
  std::vector<int64_t> first(n + 1, 0);     // first chunk of each array
  for (int k = 0; k < n; ++k)
    first[k + 1] = first[k] + (mx_tblob_size(&c->inputs[k]) + kSumSqChunk - 1) / kSumSqChunk;
  std::vector<double> partial(first[n], 0.0);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, {
    parallel_for_cost(first[n], kSumSqChunk, [&](int64_t b, int64_t e) {
      int k = 0;
      for (int64_t j = b; j < e; ++j) {
        while (first[k + 1] <= j) ++k;
        const int64_t lo = (j - first[k]) * kSumSqChunk;
        const int64_t size = mx_tblob_size(&c->inputs[k]);
        const int64_t hi = lo + kSumSqChunk < size ? lo + kSumSqChunk : size;
        partial[j] = sum_sq_range(static_cast<const T *>(c->inputs[k].dptr), lo, hi);
      }
    });
  });
  float *out = static_cast<float *>(c->outputs[0].dptr);
  for (int k = 0; k < n; ++k) {
    double s = 0;
    for (int64_t j = first[k]; j < first[k + 1]; ++j) s += partial[j];
    if (c->req[0] == MX_REQ_ADD) out[k] += float(s);
    else if (c->req[0] != MX_REQ_NULL) out[k] = float(s);
  }
  return 0;
}

struct LarsParam { double eta, eps, rescale_grad; };

// Inputs lrs, weights_sum_sq, grads_sum_sq, wds: float32 (n,); output float32 (n,).
static int multi_lars(MXOpCall *c) {
  const LarsParam &p = *static_cast<const LarsParam *>(c->params);
  const float *lrs = static_cast<const float *>(c->inputs[0].dptr);
  const float *wss = static_cast<const float *>(c->inputs[1].dptr);
  const float *gss = static_cast<const float *>(c->inputs[2].dptr);
  const float *wds = static_cast<const float *>(c->inputs[3].dptr);
  float *out = static_cast<float *>(c->outputs[0].dptr);
  const float eta = float(p.eta), eps = float(p.eps), rescale = float(p.rescale_grad);
  const int64_t n = mx_tblob_size(&c->inputs[0]);
  for (int64_t i = 0; i < n; ++i) {
    float v = lrs[i];
    if (wss[i] > 0 && gss[i] > 0) {
      const float wn = std::sqrt(wss[i]);
      v = lrs[i] * eta * wn / (std::sqrt(gss[i]) * rescale + wds[i] * wn + eps);
    }
    if (c->req[0] == MX_REQ_ADD) out[i] += v;
    else if (c->req[0] != MX_REQ_NULL) out[i] = v;
  }
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_MULTI_CPU_H_
