// CTCLoss (MXNet 1.x's ctc_loss-inl.h, warp-ctc's CPU algorithm) on the CPU.
//
// data (T, N, A) holds activations; the softmax over the alphabet is taken
// here.  Sequence b has n = data_lengths[b] steps (T without them) and the
// labels label[b, :m]: m = label_lengths[b], or the labels before the
// first padding value (0 with blank 'first', -1 with 'last').  With the
// blank k and the extended labels z = (k, l1, k, l2, ..., lm, k) (S = 2m + 1
// states) the forward variables, in log space, are
//   alpha[0, 0] = lp[0, k],  alpha[0, 1] = lp[0, l1],
//   alpha[t, s] = lse(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2] where
//                     z[s] is a label other than z[s-2]) + lp[t, z[s]]
// with lp the log-softmax; loss[b] = -lse(alpha[n-1, S-1], alpha[n-1, S-2])
// = -loglik.  The gradient w.r.t. the activations (MXNet's hidden output
// 'grad'), with beta the same recursion run backwards (emission at t
// included), is softmax minus the posterior of the states emitting a:
//   grad[t, b, a] = y[t, a] - sum_{s: z[s] = a} exp(alpha + beta - lp[t, a] - loglik)[t, s]
// and 0 at t >= n.  A sequence whose labels cannot fit its steps (m +
// repeated neighbours > n) has loss 0 and gradient 0, as in MXNet.
// Lengths are clipped to the arrays and labels to the alphabet (MXNet
// reads out of bounds there).  Sequences are split across cores; each
// keeps its alpha (n x S), two beta rows and its log-softmax (n x A),
// visits only the states that can lie on a complete path at each step, and
// takes each step's exps in one vectorised call (vexp.h) and its logs in
// one vectorised loop (ctc_log_sum).
//
// Backward (_backward_ctc_loss), inputs (out_grad (N,), grad (T, N, A)):
//   data_grad[t, b, a] = out_grad[b] * grad[t, b, a].
#ifndef MX_OPS_CTC_CPU_H_
#define MX_OPS_CTC_CPU_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nn_common.h"
#include "parallel.h"
#include "vexp.h"

namespace mxop {

// Packed by mx_ops.ops.loss.ctc (CtcParam).
struct CtcParam {
  int32_t blank_last, use_data_lengths, use_label_lengths, reserved;
};

template <typename A>
static inline A ctc_lse(A a, A b) {
  if (a < b) { const A t = a; a = b; b = t; }
  if (b == -std::numeric_limits<A>::infinity()) return a;
  return a + std::log1p(std::exp(b - a));
}

// Element i of an index array of any dtype, truncated as MXNet's cast to int.
static inline int64_t ctc_index(const MXTBlob &b, int64_t i) {
  switch (b.dtype) {
    case MX_FLOAT32: return int64_t(int(static_cast<const float *>(b.dptr)[i]));
    case MX_FLOAT64: return int64_t(int(static_cast<const double *>(b.dptr)[i]));
    case MX_FLOAT16: return int64_t(int(float(static_cast<const half_t *>(b.dptr)[i])));
    case MX_UINT8: return static_cast<const uint8_t *>(b.dptr)[i];
    case MX_INT8: return static_cast<const int8_t *>(b.dptr)[i];
    case MX_INT32: return static_cast<const int32_t *>(b.dptr)[i];
    case MX_INT64: return static_cast<const int64_t *>(b.dptr)[i];
    default: return 0;
  }
}

// The steps and the labels of each sequence, read once (N * L values).
struct CtcSequences {
  std::vector<int64_t> steps, count, labels;  // labels: N x L, clipped to [0, A)
};

static CtcSequences ctc_sequences(const MXOpCall *c, const CtcParam &p) {
  const MXTBlob &data = c->inputs[0], &label = c->inputs[1];
  const int64_t T = data.shape[0], N = data.shape[1], A = data.shape[2], L = label.shape[1];
  const int64_t pad = p.blank_last ? -1 : 0;
  CtcSequences s;
  s.steps.assign(size_t(N), T);
  s.count.assign(size_t(N), 0);
  s.labels.assign(size_t(N * L), 0);
  const int lengths = 2;                    // the first lengths input
  for (int64_t b = 0; b < N; ++b) {
    if (p.use_data_lengths) {
      const int64_t n = ctc_index(c->inputs[lengths], b);
      s.steps[b] = n < 0 ? 0 : n > T ? T : n;
    }
    int64_t m = L;
    for (int64_t j = 0; j < L; ++j) {
      const int64_t v = ctc_index(label, b * L + j);
      if (!p.use_label_lengths && v == pad && m == L) m = j;
      s.labels[b * L + j] = v < 0 ? 0 : v >= A ? A - 1 : v;
    }
    if (p.use_label_lengths) {
      const int64_t v = ctc_index(c->inputs[lengths + p.use_data_lengths], b);
      m = v < 0 ? 0 : v > L ? L : v;
    }
    s.count[b] = m;
  }
  return s;
}

// log(x) for the sums ctc_step takes logs of: 0 (all terms exp(-inf)) or
// within [1, 3] (the largest term is exp(0)).  A loop of these vectorises
// where std::log is a scalar call per state (the region sets
// no-trapping-math so that GCC if-converts the selects).  x = 2^e m with
// e in {0, 1} and m in [0.75, 1.5); log m = 2 atanh(r), r = (m - 1) /
// (m + 1) within [-1/7, 1/5], as the series 2 r (1 + r^2/3 + r^4/5 + ...)
// cut where its next term is below the precision of A (r^2 <= 0.04: 5
// terms for float, 11 for double): within 3 ulp of std::log (checked over
// [1, 3]).
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
template <typename A>
static inline A ctc_log_sum(A x) {
  constexpr int kTerms = sizeof(A) == 4 ? 5 : 11;
  const bool high = x >= A(1.5);
  const A m = high ? x * A(0.5) : x;
  const A r = (m - A(1)) / (m + A(1)), r2 = r * r;
  A p = A(1) / A(2 * kTerms - 1);
  for (int k = kTerms - 1; k >= 1; --k) p = p * r2 + A(1) / A(2 * k - 1);
  const A v = A(2) * r * p + (high ? A(0.693147180559945309417232121458176568) : A(0));
  return x == A(0) ? -std::numeric_limits<A>::infinity() : v;
}

// m[k] += log(e[k] + e[W + k] + e[2 W + k]) for k < W.
template <typename A>
static void ctc_add_log_sums(A *m, const A *e, int64_t W) {
  for (int64_t k = 0; k < W; ++k) m[k] += ctc_log_sum(e[k] + e[W + k] + e[2 * W + k]);
}

// The three terms of W states' log-sum-exp, a[k], b[k] and c[k] where
// jump[k] (else -inf), less their max m[k] (0 where all are -inf: the exps
// give 0 and the log -inf) into e (3 W values).
template <typename A>
static void ctc_terms(const A *a, const A *b, const A *c, const A *jump, A *m, A *e,
                      int64_t W) {
  const A ninf = -std::numeric_limits<A>::infinity();
  for (int64_t k = 0; k < W; ++k) {
    const A x = a[k], y = b[k], v = jump[k] != A(0) ? c[k] : ninf;
    A top = x > y ? x : y;
    top = top > v ? top : v;
    top = top == ninf ? A(0) : top;
    m[k] = top;
    e[k] = x - top;
    e[W + k] = y - top;
    e[2 * W + k] = v - top;
  }
}
#pragma GCC pop_options

// Per-thread scratch of ctc_sequence.
template <typename A>
struct CtcScratch {
  std::vector<A> lp, alpha, beta, acc, mx, ex, tops, jump, jump_up;
  std::vector<int64_t> sym;
};

// alpha and beta rows hold S states between kCtcPad -inf states on each
// side, so that a step reads s - 2 .. s + 2 of every state unchecked.
constexpr int64_t kCtcPad = 2;

// One step of the recursion over the states [s0, s1): out[s] = lse(in[s],
// in[s + d], in[s + 2d] where jump[s]) + l[sym[s]], d = -1 for alpha (from
// the step before) and +1 for beta (from the step after).  The terms, their
// exps (one vexp call) and their logs (ctc_add_log_sums) are vectorised
// loops.
template <typename A>
static inline void ctc_step(const A *in, A *out, const A *l, int64_t s0, int64_t s1, int d,
                            const int64_t *sym, const A *jump, CtcScratch<A> &w) {
  const int64_t W = s1 - s0;
  if (W <= 0) return;
  A *m = w.mx.data(), *e = w.ex.data();
  ctc_terms(in + s0, in + s0 + d, in + s0 + 2 * d, jump + s0, m, e, W);
  vexp(e, e, 3 * W);
  ctc_add_log_sums(m, e, W);
  for (int64_t k = 0; k < W; ++k) out[s0 + k] = m[k] + l[sym[s0 + k]];
}

// Rows of the log-softmax whose exps go through one vexp call (a few
// thousand values: a call per row of a small alphabet is mostly overhead).
static inline int64_t ctc_softmax_rows(int64_t A_) { return A_ >= 2048 ? 1 : 2048 / A_; }
static inline int64_t ctc_softmax_block(int64_t A_) { return ctc_softmax_rows(A_) * A_; }

// lp[t, :] = x[t, :] - (max + log(sum(exp(x[t, :] - max)))), the
// log-softmax of row t (x + t * stride) for t < n, in A; ex:
// ctc_softmax_block(A_) values of scratch, tops ctc_softmax_rows(A_).
template <typename T, typename A>
static void ctc_log_softmax(const T *x, int64_t stride, int64_t n, int64_t A_, A *lp, A *ex,
                            A *tops) {
  const int64_t rows = ctc_softmax_rows(A_);
  for (int64_t t0 = 0; t0 < n; t0 += rows) {
    const int64_t t1 = t0 + rows < n ? t0 + rows : n;
    for (int64_t t = t0; t < t1; ++t) {               // each row less its max
      const T *row = x + t * stride;
      A *out = lp + t * A_;
      A top = A(row[0]);
      for (int64_t a = 0; a < A_; ++a) {
        out[a] = A(row[a]);
        top = out[a] > top ? out[a] : top;
      }
      for (int64_t a = 0; a < A_; ++a) out[a] -= top;
      tops[t - t0] = top;
    }
    vexp(lp + t0 * A_, ex, (t1 - t0) * A_);
    for (int64_t t = t0; t < t1; ++t) {
      const A *e = ex + (t - t0) * A_;
      A sum = A(0);
      for (int64_t a = 0; a < A_; ++a) sum += e[a];
      const A lse = tops[t - t0] + std::log(sum);
      const T *row = x + t * stride;
      A *out = lp + t * A_;
      for (int64_t a = 0; a < A_; ++a) out[a] = A(row[a]) - lse;
    }
  }
}

// One sequence: its loss, and its gradient rows (stride N * A) when g != 0;
// *written: the steps whose gradient rows it wrote.
template <typename T, typename A, bool ADD>
static A ctc_sequence(const T *x, int64_t stride, int64_t n, int64_t A_, const int64_t *lab,
                      int64_t m, int64_t blank, T *g, int64_t *written, CtcScratch<A> &w) {
  const A ninf = -std::numeric_limits<A>::infinity();
  int64_t repeats = 0;
  for (int64_t j = 1; j < m; ++j) repeats += lab[j] == lab[j - 1];
  *written = 0;
  if (n == 0 || m + repeats > n) return A(0);           // infeasible: MXNet's 0, no gradient
  const int64_t S = 2 * m + 1, R = S + 2 * kCtcPad;      // R: a padded row
  // sym[s]: the symbol of state s; jump[s]: whether s-2 -> s is a transition
  // (a label unlike the one before it); jump_up[s]: s+2 -> s backwards.
  w.sym.resize(size_t(S));
  w.jump.assign(size_t(S), A(0));
  w.jump_up.assign(size_t(S), A(0));
  const int64_t *z = w.sym.data();
  for (int64_t s = 0; s < S; ++s) {
    w.sym[s] = s & 1 ? lab[s >> 1] : blank;
    if ((s & 1) && s >= 3 && lab[s >> 1] != lab[(s >> 1) - 1]) {
      w.jump[s] = A(1);
      w.jump_up[s - 2] = A(1);
    }
  }
  w.lp.resize(size_t(n * A_));
  w.acc.resize(size_t(A_ > 3 * S ? A_ : 3 * S));
  w.mx.resize(size_t(S));
  w.ex.resize(size_t(3 * S > ctc_softmax_block(A_) ? 3 * S : ctc_softmax_block(A_)));
  w.tops.resize(size_t(ctc_softmax_rows(A_)));
  ctc_log_softmax(x, stride, n, A_, w.lp.data(), w.ex.data(), w.tops.data());
  // Only states s in [lo(t), hi(t)) can lie on a path that starts at step 0
  // (s <= 2t + 1) and ends at step n - 1 (s >= S - 2 (n - t)); the rest
  // stay -inf.
  auto lo = [&](int64_t t) { const int64_t v = S - 2 * (n - t); return v > 0 ? v : 0; };
  auto hi = [&](int64_t t) { const int64_t v = 2 * t + 2; return v < S ? v : S; };
  w.alpha.assign(size_t(n * R), ninf);
  A *alpha = w.alpha.data() + kCtcPad;                 // row t: alpha + t * R
  const A *lp = w.lp.data();
  alpha[0] = lp[blank];
  if (S > 1) alpha[1] = lp[z[1]];
  for (int64_t t = 1; t < n; ++t)
    ctc_step(alpha + (t - 1) * R, alpha + t * R, lp + t * A_, lo(t), hi(t), -1, z,
             w.jump.data(), w);
  const A *last = alpha + (n - 1) * R;
  const A loglik = S > 1 ? ctc_lse(last[S - 1], last[S - 2]) : last[0];
  if (g == nullptr) return -loglik;
  *written = n;
  // Beta backwards in time, two rows; each step's gradient row at once.
  w.beta.assign(size_t(2 * R), ninf);
  for (int64_t t = n - 1; t >= 0; --t) {
    A *cur = w.beta.data() + kCtcPad + (t & 1) * R;
    const A *next = w.beta.data() + kCtcPad + ((t + 1) & 1) * R;
    const A *l = lp + t * A_;
    const int64_t s0 = lo(t), s1 = hi(t);
    for (int64_t s = 0; s < S; ++s) cur[s] = ninf;
    if (t == n - 1) {
      cur[S - 1] = l[z[S - 1]];
      if (S > 1) cur[S - 2] = l[z[S - 2]];
    } else {
      ctc_step(next, cur, l, s0, s1, 1, z, w.jump_up.data(), w);
    }
    // The posterior probability of each state at step t, alpha beta / y over
    // the likelihood (at most 1: no overflow), summed per symbol into e.
    A *post = w.acc.data(), *e = w.ex.data();
    const A *al = alpha + t * R;
    for (int64_t s = s0; s < s1; ++s) post[s - s0] = al[s] + cur[s] - l[z[s]] - loglik;
    vexp(post, post, s1 - s0);
    vexp(l, e, A_);                                   // the softmax
    for (int64_t s = s0; s < s1; ++s) e[z[s]] -= post[s - s0];
    T *grow = g + t * stride;
    for (int64_t a = 0; a < A_; ++a) nn_store<ADD>(grow, a, e[a]);
  }
  return -loglik;
}

template <typename T, bool ADD>
static void ctc_forward_typed(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const CtcParam &p = *static_cast<const CtcParam *>(c->params);
  const MXTBlob &data = c->inputs[0];
  const int64_t T_ = data.shape[0], N = data.shape[1], A_ = data.shape[2];
  const int64_t L = c->inputs[1].shape[1];
  const T *x = static_cast<const T *>(data.dptr);
  T *loss = static_cast<T *>(c->outputs[0].dptr);
  const int32_t loss_req = c->req[0], grad_req = c->req[1];
  T *grad = grad_req == MX_REQ_NULL ? nullptr : static_cast<T *>(c->outputs[1].dptr);
  const CtcSequences seq = ctc_sequences(c, p);
  const int64_t blank = p.blank_last ? A_ - 1 : 0, stride = N * A_;
  // Each state of each step costs a few exps and a log.
  parallel_for_cost(N, T_ * (2 * A_ + 16 * L + 8), [&](int64_t b0, int64_t b1) {
    CtcScratch<A> scratch;
    for (int64_t b = b0; b < b1; ++b) {
      T *g = grad == nullptr ? nullptr : grad + b * A_;
      int64_t written;
      const A v = ctc_sequence<T, A, ADD>(x + b * A_, stride, seq.steps[b], A_,
                                          seq.labels.data() + b * L, seq.count[b], blank, g,
                                          &written, scratch);
      nn_put(loss, b, v, loss_req);
      if (g == nullptr || ADD) continue;
      // Steps the recursion did not write (past the sequence, or all of an
      // infeasible one) have a zero gradient.
      for (int64_t t = written; t < T_; ++t)
        for (int64_t a = 0; a < A_; ++a) g[t * stride + a] = T(0);
    }
  });
}

// Inputs (data, label[, data_lengths][, label_lengths]); outputs (loss (N,), grad).
static int ctc_loss_forward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL && c->req[1] == MX_REQ_NULL) return 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  if (c->req[1] == MX_REQ_ADD) ctc_forward_typed<T, true>(c);
                  else ctc_forward_typed<T, false>(c));
  return 0;
}

template <bool ADD, typename T>
static void ctc_backward_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  const MXTBlob &gb = c->inputs[1];
  const T *g = static_cast<const T *>(gb.dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int64_t rows = gb.shape[0] * gb.shape[1], N = gb.shape[1], A_ = gb.shape[2];
  parallel_for_cost(rows, A_, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const A s = A(og[r % N]);
      for (int64_t a = 0; a < A_; ++a) nn_store<ADD>(dx, r * A_ + a, A(s * A(g[r * A_ + a])));
    }
  });
}

// Inputs (out_grad (N,), grad (T, N, A)); output data_grad (T, N, A).
static int ctc_loss_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[1].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (ctc_backward_loop<ADD, T>(c))));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_CTC_CPU_H_
