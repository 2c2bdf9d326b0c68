// One instruction set's copy of the fused updates' loops (see
// fused_loops.h, which includes this file once per instruction set inside
// `#pragma GCC target` regions, with MX_FUSED_NS naming the namespace).  No
// include guard on purpose.  Every loop touches element i of each array
// alone (an output that is the weight is read at i before it is written
// at i), so `#pragma GCC ivdep` lets it vectorize without alias checks
// over the five or six arrays an update reads and writes.

namespace mxop {
namespace MX_FUSED_NS {

// STORE: 0 discards the new weight (req 'null'; the states still update,
// as MXNet's kernels do), 1 writes it, 2 adds it to the output.
template <template <typename> class OP, int STORE, typename T, typename P>
static void fused_loop(const P &p, MXOpCall *c) {
  const OP<T> op(p, c);
  typedef typename OP<T>::Out O;
  typedef typename OP<T>::A A;
  O *out = static_cast<O *>(c->outputs[0].dptr);
  parallel_for(mx_tblob_size(&c->inputs[0]), [&](int64_t b, int64_t e) {
#pragma GCC ivdep
    for (int64_t i = b; i < e; ++i) {
      const A v = op(i);
      if constexpr (STORE == 1) out[i] = O(v);
      if constexpr (STORE == 2) out[i] = O(A(out[i]) + v);
      (void)v;
    }
  });
}

// One weight's elements [b, e).  A: the compute type; M: the momentum's.
// p: momentum, rescale_grad, clip_gradient (MultiParam's).
template <typename T, bool MOM, bool MP, int STORE, typename P>
static void multi_sgd_range(const P &p, double lr_d, double wd_d, const T *w, const T *g,
                            void *mom_v, float *w32, T *out, int64_t b, int64_t e) {
  typedef typename std::conditional<MP, float, typename NnAcc<T>::type>::type A;
  typedef typename std::conditional<MP, float, T>::type M;
  M *mom = static_cast<M *>(mom_v);
  const A lr = A(lr_d), wd = A(wd_d), momentum = A(p.momentum), rescale = A(p.rescale_grad),
          clip = A(p.clip_gradient);
  const bool clipping = p.clip_gradient >= 0;
#pragma GCC ivdep
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

// AdamW (LAMB = false: writes the new weight per STORE) or LAMB's phase 1
// (LAMB = true: writes the step into st) over one weight's [b, e).  A: the
// compute type; M: the moments' (and the step's); MP: on w32.  q: beta1,
// beta2, epsilon, clip, rescale, lr, wd, eta or the bias divisors keep1, keep2.
template <typename T, typename A, typename M, bool MP, bool LAMB, int STORE>
static void adam_range(const double *q, const T *w, const T *g, M *mean, M *var, float *w32,
                       M *st, T *out, int64_t b, int64_t e) {
  const A b1 = A(q[0]), b2 = A(q[1]), eps = A(q[2]), clip = A(q[3]), rescale = A(q[4]);
  const A lr = A(q[5]), wd = A(q[6]), eta = A(q[7]), keep1 = A(q[8]), keep2 = A(q[9]);
  const bool clipping = q[3] >= 0;
#pragma GCC ivdep
  for (int64_t i = b; i < e; ++i) {
    A gr = rescale * A(g[i]);
    if (clipping) gr = opt_clip(gr, clip);
    mean[i] = M(b1 * A(mean[i]) + (A(1) - b1) * gr);
    var[i] = M(b2 * A(var[i]) + (A(1) - b2) * gr * gr);
    const A wv = MP ? A(w32[i]) : A(w[i]);
    if constexpr (LAMB) {
      st[i] = M(A(mean[i]) / keep1 / (std::sqrt(A(var[i]) / keep2) + eps) + wd * wv);
    } else {
      const A nw = wv - eta * (lr * A(mean[i]) / (std::sqrt(A(var[i])) + eps) + wd * wv);
      if constexpr (MP) w32[i] = float(nw);
      if constexpr (STORE == 1) out[i] = T(nw);
      if constexpr (STORE == 2) out[i] = T(A(out[i]) + nw);
    }
  }
}

// LAMB's phase 2 over [b, e): w - lr*st (lr holds the trust ratio).
template <typename T, typename A, typename M, bool MP, int STORE>
static void lamb_apply_range(A lr, const T *w, float *w32, const M *st, T *out, int64_t b,
                             int64_t e) {
#pragma GCC ivdep
  for (int64_t i = b; i < e; ++i) {
    const A nw = (MP ? A(w32[i]) : A(w[i])) - lr * A(st[i]);
    if constexpr (MP) w32[i] = float(nw);
    if constexpr (STORE == 1) out[i] = T(nw);
    if constexpr (STORE == 2) out[i] = T(A(out[i]) + nw);
  }
}

}  // namespace MX_FUSED_NS
}  // namespace mxop
