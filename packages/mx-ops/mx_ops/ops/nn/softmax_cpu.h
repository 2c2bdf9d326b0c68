// softmax and log_softmax along one axis, forward and backward.
//
// The array is seen as (outer, n, inner) around the axis.  Forward
// subtracts the maximum before exp, so no input overflows (MXNet does the
// same; with a negative temperature, softmin's, the minimum); sums run in the compute type (float for float16, as MXNet's
// AType).
//   softmax:      y = exp((x - max)/T) / sum
//   log_softmax:  y = (x - max)/T - log(sum)
// Backward takes (out_grad, out_data), MXNet's convention:
//   softmax:      dx = y * (g - sum(g * y)) / T
//   log_softmax:  dx = (g - exp(y) * sum(g)) / T
//
// exp is vexp.h's (16 floats per instruction with AVX-512), and every pass
// is a unit-stride loop: with inner == 1 a row is contiguous; otherwise the
// kernel walks a block of up to kLanes neighbouring rows together, whose
// elements at one position along the axis are contiguous.  No heap memory:
// results of exp go to the output (softmax, req write) or are recomputed;
// sums whose exps are not kept take vexp.h's sum-only exp (no stores).
// Rows / blocks are split across cores.
#ifndef MX_OPS_SOFTMAX_CPU_H_
#define MX_OPS_SOFTMAX_CPU_H_

#include <cmath>
#include <cstdint>

#include "nn_common.h"
#include "parallel.h"
#include "vexp.h"

namespace mxop {

// Packed by mx_ops.nn_act: the (outer, n, inner) view and the temperature.
struct SoftmaxParam { int64_t outer, n, inner; double temperature; int32_t log; int32_t pad_; };

// Rows walked together when inner > 1, and the chunk of a contiguous row
// converted or exponentiated at a time (stack buffers, in L1).
constexpr int64_t kLanes = 256;

template <typename A, typename T>
static inline void widen(const T *x, A *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = A(x[i]);
}

// ------------------------------------------------------------ contiguous
template <bool ADD, typename T>
static void softmax_fwd_row(const T *x, T *y, int64_t n, bool log,
                            typename NnAcc<T>::type inv_t) {
  typedef typename NnAcc<T>::type A;
  constexpr bool same = sizeof(A) == sizeof(T);
  A mx = A(x[0]);
  if (inv_t >= A(0)) {
#pragma omp simd reduction(max : mx)
    for (int64_t j = 1; j < n; ++j) mx = A(x[j]) > mx ? A(x[j]) : mx;
  } else {                              // softmin: the minimum is the shift
#pragma omp simd reduction(min : mx)
    for (int64_t j = 1; j < n; ++j) mx = A(x[j]) < mx ? A(x[j]) : mx;
  }
  if constexpr (same && !ADD) {
    if (!log) {
      // The exponents go straight to the output, which is then scaled.
      const A inv = A(1) / vexp_shift_sum_below(x, y, n, mx, inv_t);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) y[j] *= inv;
      return;
    }
  }
  // Otherwise no exponent of this pass is kept (log_softmax keeps none; the
  // others exponentiate again below): the sum-only exp, no stores.
  const A sum = vsum_exp_below(x, n, mx, inv_t);
  if (log) {
    const A ls = std::log(sum);
    for (int64_t j = 0; j < n; ++j) nn_store<ADD>(y, j, A((A(x[j]) - mx) * inv_t - ls));
    return;
  }
  const A inv = A(1) / sum;
  alignas(64) A buf[kLanes];
  for (int64_t j0 = 0; j0 < n; j0 += kLanes) {       // exp again: no buffer of n
    const int64_t m = n - j0 < kLanes ? n - j0 : kLanes;
    widen(x + j0, buf, m);
    vexp_shift_sum_below(buf, buf, m, mx, inv_t);
    for (int64_t j = 0; j < m; ++j) nn_store<ADD>(y, j0 + j, A(buf[j] * inv));
  }
}

template <bool ADD, typename T>
static void softmax_bwd_row(const T *g, const T *y, T *dx, int64_t n, bool log,
                            typename NnAcc<T>::type inv_t) {
  typedef typename NnAcc<T>::type A;
  A dot = A(0);
  if (log) {
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < n; ++j) dot += A(g[j]);
    alignas(64) A e[kLanes];
    for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
      const int64_t m = n - j0 < kLanes ? n - j0 : kLanes;
      widen(y + j0, e, m);
      vexp(e, e, m);
      for (int64_t j = 0; j < m; ++j)
        nn_store<ADD>(dx, j0 + j, A((A(g[j0 + j]) - e[j] * dot) * inv_t));
    }
    return;
  }
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < n; ++j) dot += A(g[j]) * A(y[j]);
  for (int64_t j = 0; j < n; ++j) nn_store<ADD>(dx, j, A(A(y[j]) * (A(g[j]) - dot) * inv_t));
}

// ----------------------------------------------------------- lane blocks
// Rows r0 .. r0+L-1 of one outer block (L <= kLanes): element j of row l at
// base[j * inner + l].
template <bool ADD, typename T>
static void softmax_fwd_lanes(const T *x, T *y, int64_t n, int64_t inner, int64_t L, bool log,
                              typename NnAcc<T>::type inv_t) {
  typedef typename NnAcc<T>::type A;
  constexpr bool same = sizeof(A) == sizeof(T);
  alignas(64) A mx[kLanes], sum[kLanes], e[kLanes];
  A *const ya = same ? reinterpret_cast<A *>(y) : nullptr;   // y itself, when of type A
  for (int64_t l = 0; l < L; ++l) { mx[l] = A(x[l]); sum[l] = A(0); }
  const bool low = inv_t < A(0);          // softmin: the minimum is the shift
  for (int64_t j = 1; j < n; ++j) {
    const T *xr = x + j * inner;
    if (low) {
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) mx[l] = A(xr[l]) < mx[l] ? A(xr[l]) : mx[l];
    } else {
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) mx[l] = A(xr[l]) > mx[l] ? A(xr[l]) : mx[l];
    }
  }
  const bool keep = !log && !ADD && same;      // exponents kept in y, scaled after
  for (int64_t j = 0; j < n; ++j) {
    const T *xr = x + j * inner;
    A *dst = keep ? ya + j * inner : e;
#pragma omp simd
    for (int64_t l = 0; l < L; ++l) dst[l] = (A(xr[l]) - mx[l]) * inv_t;
    if (!keep) {                          // the exponents only feed the sums
      vacc_exp_below(e, sum, L);
      continue;
    }
    vexp(dst, dst, L);
#pragma omp simd
    for (int64_t l = 0; l < L; ++l) sum[l] += dst[l];
  }
  if (log) {
    for (int64_t l = 0; l < L; ++l) sum[l] = std::log(sum[l]);
    for (int64_t j = 0; j < n; ++j) {
      const T *xr = x + j * inner;
      for (int64_t l = 0; l < L; ++l)
        nn_store<ADD>(y, j * inner + l, A((A(xr[l]) - mx[l]) * inv_t - sum[l]));
    }
    return;
  }
  for (int64_t l = 0; l < L; ++l) sum[l] = A(1) / sum[l];
  for (int64_t j = 0; j < n; ++j) {
    if (keep) {
      A *yr = ya + j * inner;
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) yr[l] *= sum[l];
      continue;
    }
    const T *xr = x + j * inner;
    for (int64_t l = 0; l < L; ++l) e[l] = (A(xr[l]) - mx[l]) * inv_t;
    vexp(e, e, L);
    for (int64_t l = 0; l < L; ++l) nn_store<ADD>(y, j * inner + l, A(e[l] * sum[l]));
  }
}

template <bool ADD, typename T>
static void softmax_bwd_lanes(const T *g, const T *y, T *dx, int64_t n, int64_t inner,
                              int64_t L, bool log, typename NnAcc<T>::type inv_t) {
  typedef typename NnAcc<T>::type A;
  alignas(64) A dot[kLanes], e[kLanes];
  for (int64_t l = 0; l < L; ++l) dot[l] = A(0);
  for (int64_t j = 0; j < n; ++j) {
    const T *gr = g + j * inner, *yr = y + j * inner;
    if (log) {
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) dot[l] += A(gr[l]);
    } else {
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) dot[l] += A(gr[l]) * A(yr[l]);
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    const T *gr = g + j * inner, *yr = y + j * inner;
    if (log) {
      widen(yr, e, L);
      vexp(e, e, L);
      for (int64_t l = 0; l < L; ++l)
        nn_store<ADD>(dx, j * inner + l, A((A(gr[l]) - e[l] * dot[l]) * inv_t));
    } else {
      for (int64_t l = 0; l < L; ++l)
        nn_store<ADD>(dx, j * inner + l, A(A(yr[l]) * (A(gr[l]) - dot[l]) * inv_t));
    }
  }
}

// ------------------------------------------------------------- dispatch
// Calls f(offset, L) for every row (inner == 1: L = 0) or lane block, split
// across cores; each costs n (x L) element-visits.
template <typename F>
static inline void softmax_blocks(const SoftmaxParam &p, F f) {
  if (p.inner == 1) {
    parallel_for_cost(p.outer, p.n, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) f(r * p.n, int64_t(0));
    });
    return;
  }
  const int64_t per = (p.inner + kLanes - 1) / kLanes;
  parallel_for_cost(p.outer * per, p.n * (p.inner < kLanes ? p.inner : kLanes),
                    [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it) {
      const int64_t o = it / per, l0 = it % per * kLanes;
      f(o * p.n * p.inner + l0, p.inner - l0 < kLanes ? p.inner - l0 : kLanes);
    }
  });
}

template <bool ADD, typename T>
static void softmax_fwd_loop(const MXOpCall *c, const SoftmaxParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *y = static_cast<T *>(c->outputs[0].dptr);
  const A inv_t = A(1.0 / p.temperature);
  if (p.n == 0) return;
  softmax_blocks(p, [&](int64_t off, int64_t L) {
    if (L == 0) softmax_fwd_row<ADD>(x + off, y + off, p.n, p.log, inv_t);
    else softmax_fwd_lanes<ADD>(x + off, y + off, p.n, p.inner, L, p.log, inv_t);
  });
}

template <bool ADD, typename T>
static void softmax_bwd_loop(const MXOpCall *c, const SoftmaxParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  const T *y = static_cast<const T *>(c->inputs[1].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const A inv_t = A(1.0 / p.temperature);
  if (p.n == 0) return;
  softmax_blocks(p, [&](int64_t off, int64_t L) {
    if (L == 0) softmax_bwd_row<ADD>(g + off, y + off, dx + off, p.n, p.log, inv_t);
    else softmax_bwd_lanes<ADD>(g + off, y + off, dx + off, p.n, p.inner, L, p.log, inv_t);
  });
}

static int softmax_forward(MXOpCall *c) {
  const SoftmaxParam &p = *static_cast<const SoftmaxParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (softmax_fwd_loop<ADD, T>(c, p))))
  return 0;
}

static int softmax_backward(MXOpCall *c) {
  const SoftmaxParam &p = *static_cast<const SoftmaxParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (softmax_bwd_loop<ADD, T>(c, p))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SOFTMAX_CPU_H_
