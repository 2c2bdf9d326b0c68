// The optimizer update operators on the CPU, element by element with
// MXNet 1.x's formulas (src/operator/optimizer_op-inl.h).  clip(v, c) is
// max(min(v, c), -c), applied only when clip_gradient >= 0.
//   sgd_update:      w = (1 - lr*wd) * w - lr * clip(rescale*g)
//   sgd_mom_update:  mom = momentum*mom - lr*wd*w - lr * clip(rescale*g);  w = w + mom
//   adam_update:     g' = clip(rescale*g + wd*w);  mean = b1*mean + (1-b1)*g'
//                    var = b2*var + (1-b2)*g'^2;   w = w - lr * mean / (sqrt(var) + eps)
//                    (no bias correction: the Python optimizer folds it into lr)
//   rmsprop_update:  g' = clip(rescale*g + wd*w);  n = (1-gamma1)*g'^2 + gamma1*n
//                    w = w - lr * g' / sqrt(n + eps), then clipped to clip_weights if >= 0
//   ftrl_update:     g' = clip(rescale*g);  z += g' - (sqrt(n + g'^2) - sqrt(n)) * w / lr
//                    n += g'^2;  w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)
//   adagrad (MXNet's _sparse_adagrad_update, row_sparse gradients only; no wd):
//                    g' = clip(rescale*g);  h += g'^2;  w = w - (g' / sqrt(h + eps)) * lr
// Inputs (weight, grad, states...); the states are written in place and
// the output (req honoured) may be the weight itself: each element reads
// its weight before the output is stored.  float16 computes in float.
#ifndef MX_OPS_OPTIMIZER_CPU_H_
#define MX_OPS_OPTIMIZER_CPU_H_

#include <cmath>
#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

enum { kSgd = 0, kSgdMom = 1, kAdam = 2, kRmsProp = 3, kFtrl = 4, kAdagrad = 5 };

// Packed by mx_ops.ops.optimizer.optimizer.  a, b, c: sgd_mom (momentum); adam (beta1,
// beta2, epsilon); rmsprop (gamma1, epsilon, clip_weights); ftrl (lamda1, beta);
// adagrad (epsilon).
struct OptParam { double lr, wd, rescale_grad, clip_gradient, a, b, c; int32_t kind, pad_; };

template <typename A>
static inline A opt_clip(A v, A bound) { return v > bound ? bound : (v < -bound ? -bound : v); }

// One element: reads w, g and the states s0, s1; writes the states and
// returns the new weight.
template <int KIND, typename A, typename T>
static inline A opt_step(const OptParam &p, A w, A g, T *s0, T *s1, int64_t i) {
  const A lr = A(p.lr), wd = A(p.wd), rescale = A(p.rescale_grad), clip = A(p.clip_gradient);
  const bool clipping = p.clip_gradient >= 0;
  if constexpr (KIND == kSgd) {
    const A step = clipping ? lr * opt_clip(A(rescale * g), clip) : A(lr * rescale) * g;
    return A(A(1) - lr * wd) * w - step;
  } else if constexpr (KIND == kSgdMom) {
    const A gr = clipping ? lr * opt_clip(A(rescale * g), clip) : lr * rescale * g;
    const A mom = A(p.a) * A(s0[i]) - lr * wd * w - gr;
    s0[i] = T(mom);
    return w + A(s0[i]);
  } else if constexpr (KIND == kAdam) {
    A gr = g * rescale + w * wd;
    if (clipping) gr = opt_clip(gr, clip);
    const A b1 = A(p.a), b2 = A(p.b);
    s0[i] = T(b1 * A(s0[i]) + (A(1) - b1) * gr);
    s1[i] = T(b2 * A(s1[i]) + (A(1) - b2) * gr * gr);
    return w - lr * A(s0[i]) / (std::sqrt(A(s1[i])) + A(p.c));
  } else if constexpr (KIND == kRmsProp) {
    A gr = rescale * g + wd * w;
    if (clipping) gr = opt_clip(gr, clip);
    const A gamma1 = A(p.a);
    s0[i] = T((A(1) - gamma1) * (gr * gr) + gamma1 * A(s0[i]));
    A nw = w - lr * (gr / std::sqrt(A(s0[i]) + A(p.b)));
    if (p.c >= 0) nw = opt_clip(nw, A(p.c));
    return nw;
  } else if constexpr (KIND == kFtrl) {   // s0 = z, s1 = n
    A gr = g * rescale;
    if (clipping) gr = opt_clip(gr, clip);
    const A n = A(s1[i]);
    const A z = A(s0[i]) + A(gr - (std::sqrt(n + gr * gr) - std::sqrt(n)) * w / lr);
    s0[i] = T(z);
    s1[i] = T(n + gr * gr);
    const A zs = A(s0[i]), ns = A(s1[i]), l1 = A(p.a);
    const A sign = zs > A(0) ? A(1) : (zs < A(0) ? A(-1) : A(0));
    const A gt = std::fabs(zs) > l1 ? A(1) : A(0);
    return (sign * l1 - zs) / ((A(p.b) + std::sqrt(ns)) / lr + wd) * gt;
  } else {   // kAdagrad: s0 = history
    A gr = g * rescale;
    if (clipping) gr = opt_clip(gr, clip);
    s0[i] = T(A(s0[i]) + gr * gr);
    return w - (gr / std::sqrt(A(s0[i]) + A(p.a))) * lr;
  }
}

// STORE: 0 discards the new weight (req 'null': the states are still
// updated, as MXNet's kernels do), 1 writes it, 2 adds it to the output.
template <int KIND, int STORE, typename T>
static void opt_loop(const OptParam &p, MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const T *w = static_cast<const T *>(c->inputs[0].dptr);
  const T *g = static_cast<const T *>(c->inputs[1].dptr);
  T *s0 = c->nin > 2 ? static_cast<T *>(c->inputs[2].dptr) : nullptr;
  T *s1 = c->nin > 3 ? static_cast<T *>(c->inputs[3].dptr) : nullptr;
  T *out = static_cast<T *>(c->outputs[0].dptr);
  parallel_for(mx_tblob_size(&c->inputs[0]), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const A v = opt_step<KIND, A, T>(p, A(w[i]), A(g[i]), s0, s1, i);
      if constexpr (STORE == 1) out[i] = T(v);
      if constexpr (STORE == 2) out[i] = T(A(out[i]) + v);
      (void)v;
    }
  });
}

#define MX_OPT_CASES(CALL)                                                \
  switch (p.kind) {                                                       \
    case kSgd: { constexpr int KIND = kSgd; CALL; break; }                \
    case kSgdMom: { constexpr int KIND = kSgdMom; CALL; break; }          \
    case kAdam: { constexpr int KIND = kAdam; CALL; break; }              \
    case kRmsProp: { constexpr int KIND = kRmsProp; CALL; break; }        \
    case kFtrl: { constexpr int KIND = kFtrl; CALL; break; }              \
    default: c->error = "unknown optimizer kind"; return -1;              \
  }

template <int STORE>
static int opt_dispatch(const OptParam &p, MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, MX_OPT_CASES((opt_loop<KIND, STORE, T>(p, c))));
  return 0;
}

// Inputs (weight, grad, states...); output (the new weight).
static int optimizer_update(MXOpCall *c) {
  const OptParam &p = *static_cast<const OptParam *>(c->params);
  switch (c->req[0]) {
    case MX_REQ_NULL: return opt_dispatch<0>(p, c);
    case MX_REQ_ADD: return opt_dispatch<2>(p, c);
    default: return opt_dispatch<1>(p, c);
  }
}

}  // namespace mxop
#endif  // MX_OPS_OPTIMIZER_CPU_H_
