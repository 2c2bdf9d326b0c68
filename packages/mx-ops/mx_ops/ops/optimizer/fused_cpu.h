// The single-weight fused updates beyond optimizer_cpu.h's, with MXNet
// 1.9.1's formulas (src/operator/optimizer_op-inl.h).  g' is the scaled
// gradient rescale_grad*g, clipped to [-clip_gradient, clip_gradient] when
// clip_gradient >= 0.
//   nag_mom_update:     s = lr*(g' + wd*w);  w' = w + momentum*(momentum*mom - s) - s
//                       mom = momentum*mom - lr*(g' + wd*w'')  where w'' is w' when the
//                       output is the weight (always for mp_), else w (see NagMom)
//   signsgd_update:     w = (1 - lr*wd)*w - lr*sign(g)     (MXNet ignores rescale/clip)
//   signum_update:      mom = momentum*mom - (1-momentum)*(wd*w + g')
//                       w = (1 - lr*wd_lh)*w + lr*sign(mom)
//   ftml_update:        g'' = clip(rescale*g + wd*w);  v = b2*v + (1-b2)*g''^2
//                       d_t = (1 - b1^t)/lr * (sqrt(v/(1 - b2^t)) + eps)
//                       z = b1*z + (1-b1)*g'' - (d_t - b1*d)*w;  d = d_t;  w = -z/d_t
//   rmspropalex_update: g'' = clip(rescale*g + wd*w);  n = (1-g1)*g''^2 + g1*n
//                       gs = (1-g1)*g'' + g1*gs;  delta = g2*delta - lr*g''/sqrt(n - gs^2 + eps)
//                       w = w + delta, clipped to clip_weights when >= 0
//   lamb_update_phase1: mean = b1*mean + (1-b1)*g';  var = b2*var + (1-b2)*g'^2
//                       out = mean^/(sqrt(var^) + eps) + wd*w   (^: divided by 1 - b^t when
//                       bias_correction)
//   lamb_update_phase2: r1' = r1 clipped to [lower_bound, upper_bound] (each when >= 0);
//                       w = w - lr*(r1'/r2)*g (lr alone when r1' or r2 is 0); the mp_
//                       variant reads weight32 and leaves it as it is, as MXNet's does
// The mp_ variants (mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update,
// mp_lamb_update_phase1/2) compute in float on the float32 master copy
// weight32 (their last input, updated in place but by mp_lamb_update_phase2,
// as are float32 momenta and moments); their output is the new weight in the weight's dtype
// (mp_lamb_update_phase1's is float32).  The others compute in the weight's
// dtype (float for float16) and store the states in it.  The output may be
// the weight itself: each element reads its inputs before its output is
// stored.
#ifndef MX_OPS_FUSED_CPU_H_
#define MX_OPS_FUSED_CPU_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "nn_common.h"
#include "optimizer_cpu.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.optimizer.fused (each op names its slots a..d).
struct FusedParam {
  double lr, wd, rescale_grad, clip_gradient, a, b, c, d;
  int32_t t, flag;
};

template <typename T>
static inline T *fused_arg(MXOpCall *c, int k) {
  return static_cast<T *>(c->inputs[k].dptr);
}

template <typename A>
static inline A fused_sign(A v) { return A(int(v > A(0)) - int(v < A(0))); }

// The parameters every update shares, in the compute type, copied out of
// the block so that the loops keep them in registers.
template <typename A>
struct Hyper {
  A lr, wd, rescale, clip;
  bool clipping;
  explicit Hyper(const FusedParam &p)
      : lr(A(p.lr)), wd(A(p.wd)), rescale(A(p.rescale_grad)), clip(A(p.clip_gradient)),
        clipping(p.clip_gradient >= 0) {}
  A grad(A g) const {
    const A r = rescale * g;
    return clipping ? opt_clip(r, clip) : r;
  }
};

// Each update: a functor over element i that writes the states and returns
// the new weight; Out is its output's type.
// MXNet 1.9.1's NAG kernels store the new weight first and then compute the
// momentum's weight decay from the weight as it then reads: the new weight
// when the output is the weight (out=weight, how its NAG optimizer calls
// it) and always for mp_nag_mom_update (weight32 is written first).
static inline bool writes_weight_in_place(MXOpCall *c) {
  return c->outputs[0].dptr == c->inputs[0].dptr && c->req[0] != MX_REQ_NULL &&
         c->req[0] != MX_REQ_ADD;
}

template <typename T>
struct NagMom {
  typedef typename NnAcc<T>::type A;
  typedef T Out;
  Hyper<A> h;
  A momentum;
  bool in_place;
  const T *w, *g;
  T *mom;
  NagMom(const FusedParam &p, MXOpCall *c)
      : h(p), momentum(A(p.a)), in_place(writes_weight_in_place(c)), w(fused_arg<T>(c, 0)),
        g(fused_arg<T>(c, 1)), mom(fused_arg<T>(c, 2)) {}
  A operator()(int64_t i) const {
    const A wv = A(w[i]), gr = h.grad(A(g[i]));
    const A step = h.lr * (gr + h.wd * wv), m = A(mom[i]);
    const A nw = wv + momentum * (momentum * m - step) - step;
    const A decayed = in_place ? A(T(nw)) : wv;
    mom[i] = T(momentum * m - h.lr * (gr + h.wd * decayed));
    return nw;
  }
};

template <typename T>
struct MpNagMom {
  typedef float A;
  typedef T Out;
  Hyper<A> h;
  A momentum;
  const T *g;
  float *mom, *w32;
  MpNagMom(const FusedParam &p, MXOpCall *c)
      : h(p), momentum(A(p.a)), g(fused_arg<T>(c, 1)), mom(fused_arg<float>(c, 2)),
        w32(fused_arg<float>(c, 3)) {}
  A operator()(int64_t i) const {
    const A wv = w32[i], gr = h.grad(A(g[i])), m = mom[i];
    const A step = h.lr * (gr + h.wd * wv);
    const A nw = wv + momentum * (momentum * m - step) - step;
    w32[i] = nw;
    mom[i] = momentum * m - h.lr * (gr + h.wd * nw);
    return nw;
  }
};

template <typename T>
struct MpSgd {
  typedef float A;
  typedef T Out;
  Hyper<A> h;
  const T *g;
  float *w32;
  MpSgd(const FusedParam &p, MXOpCall *c) : h(p), g(fused_arg<T>(c, 1)), w32(fused_arg<float>(c, 2)) {}
  A operator()(int64_t i) const {
    const A nw = (A(1) - h.lr * h.wd) * w32[i] - h.lr * h.grad(A(g[i]));
    w32[i] = nw;
    return nw;
  }
};

template <typename T>
struct MpSgdMom {
  typedef float A;
  typedef T Out;
  Hyper<A> h;
  A momentum;
  const T *g;
  float *mom, *w32;
  MpSgdMom(const FusedParam &p, MXOpCall *c)
      : h(p), momentum(A(p.a)), g(fused_arg<T>(c, 1)), mom(fused_arg<float>(c, 2)),
        w32(fused_arg<float>(c, 3)) {}
  A operator()(int64_t i) const {
    const A wv = w32[i];
    const A m = momentum * mom[i] - h.lr * h.wd * wv - h.lr * h.grad(A(g[i]));
    mom[i] = m;
    w32[i] = wv + m;
    return wv + m;
  }
};

template <typename T>
struct SignSgd {
  typedef typename NnAcc<T>::type A;
  typedef T Out;
  Hyper<A> h;
  const T *w, *g;
  SignSgd(const FusedParam &p, MXOpCall *c) : h(p), w(fused_arg<T>(c, 0)), g(fused_arg<T>(c, 1)) {}
  A operator()(int64_t i) const {
    return (A(1) - h.lr * h.wd) * A(w[i]) - h.lr * fused_sign(A(g[i]));
  }
};

template <typename T>
struct Signum {
  typedef typename NnAcc<T>::type A;
  typedef T Out;
  Hyper<A> h;
  A momentum, wd_lh;
  const T *w, *g;
  T *mom;
  Signum(const FusedParam &p, MXOpCall *c)
      : h(p), momentum(A(p.a)), wd_lh(A(p.b)), w(fused_arg<T>(c, 0)), g(fused_arg<T>(c, 1)),
        mom(fused_arg<T>(c, 2)) {}
  A operator()(int64_t i) const {
    const A wv = A(w[i]), keep = A(1) - momentum;
    mom[i] = T(momentum * A(mom[i]) - keep * h.wd * wv - keep * h.grad(A(g[i])));
    return (A(1) - h.lr * wd_lh) * wv + h.lr * fused_sign(A(mom[i]));
  }
};

template <typename T>
struct Ftml {   // a = beta1, b = beta2, c = epsilon, t
  // MXNet's kernel takes beta1 and beta2 in the weight's dtype: for float16,
  // 1 - beta2^t is computed from the half-rounded beta2 (0.999 -> 0.99902).
  typedef typename NnAcc<T>::type A;
  typedef T Out;
  Hyper<A> h;
  A beta1, beta2, eps, keep1, keep2;     // keep: 1 - beta^t
  const T *w, *g;
  T *d, *v, *z;
  Ftml(const FusedParam &p, MXOpCall *c)
      : h(p), beta1(A(T(p.a))), beta2(A(T(p.b))), eps(A(p.c)),
        keep1(A(1) - A(std::pow(beta1, A(p.t)))), keep2(A(1) - A(std::pow(beta2, A(p.t)))),
        w(fused_arg<T>(c, 0)), g(fused_arg<T>(c, 1)), d(fused_arg<T>(c, 2)),
        v(fused_arg<T>(c, 3)), z(fused_arg<T>(c, 4)) {}
  A operator()(int64_t i) const {
    const A wv = A(w[i]);
    A gr = h.rescale * A(g[i]) + h.wd * wv;
    if (h.clipping) gr = opt_clip(gr, h.clip);
    v[i] = T(beta2 * A(v[i]) + (A(1) - beta2) * gr * gr);
    const A d_t = keep1 / h.lr * (std::sqrt(A(v[i]) / keep2) + eps);
    z[i] = T(beta1 * A(z[i]) + (A(1) - beta1) * gr - (d_t - beta1 * A(d[i])) * wv);
    d[i] = T(d_t);
    return -A(z[i]) / d_t;
  }
};

template <typename T>
struct RmsPropAlex {   // a = gamma1, b = gamma2, c = epsilon, d = clip_weights
  typedef typename NnAcc<T>::type A;
  typedef T Out;
  Hyper<A> h;
  A gamma1, gamma2, eps, clip_weights;
  bool clip_w;
  const T *w, *g;
  T *n, *gs, *delta;
  RmsPropAlex(const FusedParam &p, MXOpCall *c)
      : h(p), gamma1(A(p.a)), gamma2(A(p.b)), eps(A(p.c)), clip_weights(A(p.d)),
        clip_w(p.d >= 0), w(fused_arg<T>(c, 0)), g(fused_arg<T>(c, 1)),
        n(fused_arg<T>(c, 2)), gs(fused_arg<T>(c, 3)), delta(fused_arg<T>(c, 4)) {}
  A operator()(int64_t i) const {
    const A wv = A(w[i]);
    A gr = h.rescale * A(g[i]) + h.wd * wv;
    if (h.clipping) gr = opt_clip(gr, h.clip);
    n[i] = T((A(1) - gamma1) * gr * gr + gamma1 * A(n[i]));
    gs[i] = T((A(1) - gamma1) * gr + gamma1 * A(gs[i]));
    const A ns = A(n[i]), gv = A(gs[i]);
    delta[i] = T(gamma2 * A(delta[i]) - h.lr * (gr / std::sqrt(ns - gv * gv + eps)));
    const A nw = wv + A(delta[i]);
    return clip_w ? opt_clip(nw, clip_weights) : nw;
  }
};

// MP: the mp_ variant (states and master weight float32, output float32).
template <typename T, bool MP>
struct LambPhase1 {   // a = beta1, b = beta2, c = epsilon, t, flag = bias_correction
  typedef typename std::conditional<MP, float, typename NnAcc<T>::type>::type A;
  typedef typename std::conditional<MP, float, T>::type S;
  typedef S Out;
  Hyper<A> h;
  A beta1, beta2, eps, keep1, keep2;
  bool bias;
  const T *w, *g;
  S *mean, *var;
  const float *w32;
  LambPhase1(const FusedParam &p, MXOpCall *c)
      : h(p), beta1(A(p.a)), beta2(A(p.b)), eps(A(p.c)),
        keep1(A(1) - A(std::pow(A(p.a), A(p.t)))), keep2(A(1) - A(std::pow(A(p.b), A(p.t)))),
        bias(p.flag != 0),
        w(fused_arg<T>(c, 0)), g(fused_arg<T>(c, 1)), mean(fused_arg<S>(c, 2)),
        var(fused_arg<S>(c, 3)), w32(MP ? fused_arg<float>(c, 4) : nullptr) {}
  A operator()(int64_t i) const {
    const A gr = h.grad(A(g[i]));
    mean[i] = S(beta1 * A(mean[i]) + (A(1) - beta1) * gr);
    var[i] = S(beta2 * A(var[i]) + (A(1) - beta2) * gr * gr);
    A m = A(mean[i]), v = A(var[i]);
    if (bias) {
      m = m / keep1;
      v = v / keep2;
    }
    const A wv = MP ? A(w32[i]) : A(w[i]);
    return m / (std::sqrt(v) + eps) + h.wd * wv;
  }
};
template <typename T> using LambPhase1Plain = LambPhase1<T, false>;
template <typename T> using LambPhase1Mp = LambPhase1<T, true>;

// Inputs (weight, g, r1, r2[, weight32]): r1 and r2 one element each (of
// the weight's dtype, float32 with MP).
template <typename T, bool MP>
struct LambPhase2 {   // a = lower_bound, b = upper_bound
  typedef typename std::conditional<MP, float, typename NnAcc<T>::type>::type A;
  typedef typename std::conditional<MP, float, T>::type S;
  typedef T Out;
  A lr;
  const T *w;
  const S *g;
  const float *w32;
  static A ratio_lr(const FusedParam &p, MXOpCall *c) {
    A r1 = A(fused_arg<S>(c, 2)[0]);
    const A r2 = A(fused_arg<S>(c, 3)[0]);
    if (p.a >= 0) r1 = r1 > A(p.a) ? r1 : A(p.a);
    if (p.b >= 0) r1 = r1 < A(p.b) ? r1 : A(p.b);
    return (r1 == A(0) || r2 == A(0)) ? A(p.lr) : A(p.lr) * r1 / r2;
  }
  LambPhase2(const FusedParam &p, MXOpCall *c)
      : lr(ratio_lr(p, c)), w(fused_arg<T>(c, 0)), g(fused_arg<S>(c, 1)),
        w32(MP ? fused_arg<float>(c, 4) : nullptr) {}
  A operator()(int64_t i) const {
    return (MP ? A(w32[i]) : A(w[i])) - lr * A(g[i]);
  }
};
template <typename T> using LambPhase2Plain = LambPhase2<T, false>;
template <typename T> using LambPhase2Mp = LambPhase2<T, true>;

// STORE: 0 discards the new weight (req 'null'; the states still update,
// as MXNet's kernels do), 1 writes it, 2 adds it to the output.
template <template <typename> class OP, int STORE, typename T>
static void fused_loop(const FusedParam &p, MXOpCall *c) {
  const OP<T> op(p, c);
  typedef typename OP<T>::Out O;
  typedef typename OP<T>::A A;
  O *out = static_cast<O *>(c->outputs[0].dptr);
  parallel_for(mx_tblob_size(&c->inputs[0]), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const A v = op(i);
      if constexpr (STORE == 1) out[i] = O(v);
      if constexpr (STORE == 2) out[i] = O(A(out[i]) + v);
      (void)v;
    }
  });
}

template <template <typename> class OP>
static int fused_update(MXOpCall *c) {
  const FusedParam &p = *static_cast<const FusedParam *>(c->params);
  const int32_t req = c->req[0];
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, {
    if (req == MX_REQ_NULL) fused_loop<OP, 0, T>(p, c);
    else if (req == MX_REQ_ADD) fused_loop<OP, 2, T>(p, c);
    else fused_loop<OP, 1, T>(p, c);
  });
  return 0;
}

static int nag_mom_update(MXOpCall *c) { return fused_update<NagMom>(c); }
static int mp_nag_mom_update(MXOpCall *c) { return fused_update<MpNagMom>(c); }
static int mp_sgd_update(MXOpCall *c) { return fused_update<MpSgd>(c); }
static int mp_sgd_mom_update(MXOpCall *c) { return fused_update<MpSgdMom>(c); }
static int signsgd_update(MXOpCall *c) { return fused_update<SignSgd>(c); }
static int signum_update(MXOpCall *c) { return fused_update<Signum>(c); }
static int ftml_update(MXOpCall *c) { return fused_update<Ftml>(c); }
static int rmspropalex_update(MXOpCall *c) { return fused_update<RmsPropAlex>(c); }
static int lamb_update_phase1(MXOpCall *c) { return fused_update<LambPhase1Plain>(c); }
static int mp_lamb_update_phase1(MXOpCall *c) { return fused_update<LambPhase1Mp>(c); }
static int lamb_update_phase2(MXOpCall *c) { return fused_update<LambPhase2Plain>(c); }
static int mp_lamb_update_phase2(MXOpCall *c) { return fused_update<LambPhase2Mp>(c); }

}  // namespace mxop
#endif  // MX_OPS_FUSED_CPU_H_
