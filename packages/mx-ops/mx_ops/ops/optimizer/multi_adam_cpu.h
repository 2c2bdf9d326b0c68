// MXNet 1.9.1's aggregated AdamW and LAMB updates (contrib/adamw-inl.h,
// contrib/multi_lamb-inl.h), one call over all weights.  g' = rescale*g,
// clipped to clip_gradient when >= 0; k: the weight's index.
//   _multi_adamw_update:  mean = b1*mean + (1-b1)*g';  var = b2*var + (1-b2)*g'^2
//                         w = w - eta_k*(lr_k*mean/(sqrt(var) + eps) + wd_k*w); rescale
//                         is the last input: NaN, Inf or 0 skip the whole update
//   _multi_lamb_update:   phase 1 (lamb_update_phase1 at t = step_count_k, wd_k) into a
//                         scratch step s; r1 = |w|, r2 = |s|, r1 clipped to the bounds;
//                         w = w - lr_k*(r1/r2)*s (lr_k alone when r1 or r2 is 0)
// The _multi_mp_ variants compute in float on weight32 (inputs per weight:
// weight, grad, mean, var, weight32; float32 moments) unless the weights
// are float32: then weight32 is ignored, as in MXNet.
#ifndef MX_OPS_MULTI_ADAM_CPU_H_
#define MX_OPS_MULTI_ADAM_CPU_H_

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "multi_cpu.h"
#include "nn_common.h"
#include "optimizer_cpu.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.optimizer.multi_adam: this block, then num_weights
// doubles each of lrs, wds and (AdamW) etas or (LAMB) step counts.
struct MultiAdamParam {
  double beta1, beta2, epsilon, clip_gradient, rescale_grad, lower_bound, upper_bound;
  int32_t num_weights, per_weight, mp, bias_correction;
};

// The pointers of weight k's inputs in their types.  M: the moments' type.
template <typename T, typename M>
struct AdamSlots {
  const T *w;
  const T *g;
  M *mean, *var;
  float *w32;
  AdamSlots(MXOpCall *c, int k, int per, bool mp)
      : w(static_cast<const T *>(c->inputs[k * per].dptr)),
        g(static_cast<const T *>(c->inputs[k * per + 1].dptr)),
        mean(static_cast<M *>(c->inputs[k * per + 2].dptr)),
        var(static_cast<M *>(c->inputs[k * per + 3].dptr)),
        w32(mp ? static_cast<float *>(c->inputs[k * per + 4].dptr) : nullptr) {}
};

// Runs adam_range over weight k's [b, e) in the instruction set's copy, with
// STORE from the output's req (LAMB's phase 1 stores no weight).
template <typename T, typename A, typename M, bool MP, bool LAMB>
static void adam_part(const double *q, const AdamSlots<T, M> &s, M *st, MXOpCall *c, int k,
                      int64_t b, int64_t e) {
  const bool avx2 = fused_avx2_ok();
  T *out = static_cast<T *>(c->outputs[k].dptr);
  const int32_t req = LAMB ? MX_REQ_NULL : c->req[k];
  if (req == MX_REQ_NULL)
    MX_FUSED_ISA_CALL(avx2, (adam_range<T, A, M, MP, LAMB, 0>(q, s.w, s.g, s.mean, s.var,
                                                               s.w32, st, out, b, e)));
  else if (req == MX_REQ_ADD)
    MX_FUSED_ISA_CALL(avx2, (adam_range<T, A, M, MP, LAMB, 2>(q, s.w, s.g, s.mean, s.var,
                                                               s.w32, st, out, b, e)));
  else
    MX_FUSED_ISA_CALL(avx2, (adam_range<T, A, M, MP, LAMB, 1>(q, s.w, s.g, s.mean, s.var,
                                                               s.w32, st, out, b, e)));
}

template <typename T, bool MP>
static void multi_adamw_typed(const MultiAdamParam &p, MXOpCall *c, double rescale) {
  typedef typename std::conditional<MP, float, typename NnAcc<T>::type>::type A;
  typedef typename std::conditional<MP, float, T>::type M;
  const int n = p.num_weights, per = p.per_weight;
  const double *rates = reinterpret_cast<const double *>(&p + 1);
  std::vector<int64_t> sizes(n);
  for (int k = 0; k < n; ++k) sizes[k] = mx_tblob_size(&c->inputs[k * per]);
  multi_for(sizes, [&](size_t k, int64_t b, int64_t e) {
    const AdamSlots<T, M> s(c, int(k), per, MP);
    const double q[10] = {p.beta1, p.beta2, p.epsilon, p.clip_gradient, rescale, rates[k],
                          rates[n + k], rates[2 * n + k], 1.0, 1.0};
    adam_part<T, A, M, MP, false>(q, s, nullptr, c, int(k), b, e);
  });
}

// Inputs per weight (weight, grad, mean, var[, weight32]), then rescale_grad
// (one element, the weights' dtype; float32 for the mp_ form).
static int multi_adamw_update(MXOpCall *c) {
  const MultiAdamParam &p = *static_cast<const MultiAdamParam *>(c->params);
  const MXTBlob &rb = c->inputs[c->nin - 1];
  double rescale = 0;
  MX_FLOAT_SWITCH(rb.dtype, R, rescale = double(static_cast<const R *>(rb.dptr)[0]));
  if (!std::isfinite(rescale) || rescale == 0) return 0;     // MXNet skips the update
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, {
    if (p.mp && !std::is_same<T, float>::value) multi_adamw_typed<T, true>(p, c, rescale);
    else multi_adamw_typed<T, false>(p, c, rescale);
  });
  return 0;
}

// Sums of squares of each weight's array (x_k of n elements) in fixed
// chunks, so that the result does not depend on the number of workers.
template <typename X>
static std::vector<double> chunked_sum_sq(const std::vector<const X *> &xs,
                                          const std::vector<int64_t> &sizes) {
  const size_t n = xs.size();
  std::vector<int64_t> first(n + 1, 0);
  for (size_t k = 0; k < n; ++k)
    first[k + 1] = first[k] + (sizes[k] + kSumSqChunk - 1) / kSumSqChunk;
  std::vector<double> partial(first[n], 0.0), out(n, 0.0);
  const bool avx2 = fused_avx2_ok();
  parallel_for_cost(first[n], kSumSqChunk, [&](int64_t b, int64_t e) {
    size_t k = 0;
    for (int64_t j = b; j < e; ++j) {
      while (first[k + 1] <= j) ++k;
      const int64_t lo = (j - first[k]) * kSumSqChunk;
      const int64_t hi = lo + kSumSqChunk < sizes[k] ? lo + kSumSqChunk : sizes[k];
      const X *x = xs[k];
      MX_FUSED_ISA_CALL(avx2, partial[j] = sum_sq_range(x, lo, hi));
    }
  });
  for (size_t k = 0; k < n; ++k)
    for (int64_t j = first[k]; j < first[k + 1]; ++j) out[k] += partial[j];
  return out;
}

template <typename T, bool MP>
static int multi_lamb_typed(const MultiAdamParam &p, MXOpCall *c) {
  typedef typename std::conditional<MP, float, typename NnAcc<T>::type>::type A;
  typedef typename std::conditional<MP, float, T>::type M;
  typedef typename std::conditional<MP, float, T>::type W;   // the weight the norm reads
  const int n = p.num_weights, per = p.per_weight;
  const double *rates = reinterpret_cast<const double *>(&p + 1);
  std::vector<int64_t> sizes(n), start(n + 1, 0);
  std::vector<const W *> weights(n);
  for (int k = 0; k < n; ++k) {
    sizes[k] = mx_tblob_size(&c->inputs[k * per]);
    start[k + 1] = start[k] + sizes[k];
    weights[k] = static_cast<const W *>(c->inputs[k * per + (MP ? 4 : 0)].dptr);
  }
  // Phase 1 writes every weight's step into the workspace (the context's
  // pooled temporary space), in the moments' type.
  if (c->workspace_size < start[n] * int64_t(sizeof(M))) {
    c->error = "_multi_lamb_update: the workspace is smaller than the steps";
    return -1;
  }
  M *step = static_cast<M *>(c->workspace);
  multi_for(sizes, [&](size_t k, int64_t b, int64_t e) {
    const AdamSlots<T, M> s(c, int(k), per, MP);
    const double t = rates[2 * n + k];
    const double keep1 = p.bias_correction ? double(A(1) - A(std::pow(A(p.beta1), A(t)))) : 1.0;
    const double keep2 = p.bias_correction ? double(A(1) - A(std::pow(A(p.beta2), A(t)))) : 1.0;
    const double q[10] = {p.beta1, p.beta2, p.epsilon, p.clip_gradient, p.rescale_grad, 0.0,
                          rates[n + k], 0.0, keep1, keep2};
    adam_part<T, A, M, MP, true>(q, s, step + start[k], c, int(k), b, e);
  });
  std::vector<const M *> steps(n);
  for (int k = 0; k < n; ++k) steps[k] = step + start[k];
  const std::vector<double> r1s = chunked_sum_sq(weights, sizes);
  const std::vector<double> r2s = chunked_sum_sq(steps, sizes);
  // Phase 2: each weight's trust ratio (in float, as MXNet's norms are).
  std::vector<A> lrs(n);
  for (int k = 0; k < n; ++k) {
    float r1 = std::sqrt(float(r1s[k]));
    const float r2 = std::sqrt(float(r2s[k]));
    if (p.lower_bound >= 0) r1 = r1 > float(p.lower_bound) ? r1 : float(p.lower_bound);
    if (p.upper_bound >= 0) r1 = r1 < float(p.upper_bound) ? r1 : float(p.upper_bound);
    const float lr = float(rates[k]);
    lrs[k] = A(r1 == 0.0f || r2 == 0.0f ? lr : lr * r1 / r2);
  }
  const bool avx2 = fused_avx2_ok();
  multi_for(sizes, [&](size_t k, int64_t b, int64_t e) {
    const AdamSlots<T, M> s(c, int(k), per, MP);
    const M *st = step + start[k];
    T *out = static_cast<T *>(c->outputs[k].dptr);
    const A lr = lrs[k];
    if (c->req[k] == MX_REQ_NULL)
      MX_FUSED_ISA_CALL(avx2, (lamb_apply_range<T, A, M, MP, 0>(lr, s.w, s.w32, st, out, b, e)));
    else if (c->req[k] == MX_REQ_ADD)
      MX_FUSED_ISA_CALL(avx2, (lamb_apply_range<T, A, M, MP, 2>(lr, s.w, s.w32, st, out, b, e)));
    else
      MX_FUSED_ISA_CALL(avx2, (lamb_apply_range<T, A, M, MP, 1>(lr, s.w, s.w32, st, out, b, e)));
  });
  return 0;
}

// Inputs per tensor (weight, grad, mean, var[, weight32]); outputs the new
// weights; the workspace holds the steps (multi_adam.py sizes it).
static int multi_lamb_update(MXOpCall *c) {
  const MultiAdamParam &p = *static_cast<const MultiAdamParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, {
    if (p.mp && !std::is_same<T, float>::value) return multi_lamb_typed<T, true>(p, c);
    return multi_lamb_typed<T, false>(p, c);
  });
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_MULTI_ADAM_CPU_H_
