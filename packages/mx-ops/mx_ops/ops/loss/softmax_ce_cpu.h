// softmax_cross_entropy (MXNet 1.x's loss_binary_op-inl.h) on the CPU.
//
// data (batch, classes), label (batch,) of class indices in data's dtype:
//   out[0] = sum_r  log(sum_j exp(x[r, j] - m_r)) - (x[r, label_r] - m_r)
// with m_r the row's maximum (no exp overflows).  A label is truncated to an
// integer, as MXNet's static_cast<int>, and clipped to [0, classes - 1]
// (MXNet reads outside the row there).  The rows are split across cores on
// the process-wide pool (team.h, parallel.h), not an OpenMP team: after
// about 0.1 s idle the 2-vCPU VM ran a woken OpenMP worker milliseconds late
// and the first two calls of (1024, 1000) took 6 and 2-4 ms instead of 0.4.  Each
// row's loss goes to a per-row buffer in the compute type and the
// buffer is summed in double, in order, so the result does not depend on
// the thread count.
//
// Backward, inputs (out_grad, data, label), outputs (data_grad, label_grad):
//   data_grad[r, j] = out_grad[0] * (softmax(x[r])[j] - (j == label_r))
// and label_grad is zero (MXNet refuses a label gradient).
#ifndef MX_OPS_SOFTMAX_CE_CPU_H_
#define MX_OPS_SOFTMAX_CE_CPU_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "nn_common.h"
#include "team.h"
#include "vexp.h"

namespace mxop {

// Row chunk widened and exponentiated at a time (a stack buffer in L1).
constexpr int64_t kCeChunk = 256;

static inline int64_t ce_class(double v, int64_t n) {
  if (!(v > 0.0)) return 0;                      // negatives and NaN
  if (!(v < double(n))) return n - 1;
  return int64_t(v);
}

// The row's maximum in the compute type A, NaNs after x[0] skipped.  32
// independent lanes: one running maximum is a chain of dependent max
// instructions (1000 floats: 0.18 ms per 1024 rows on one thread, a third of
// the forward; 0.08 ms with the lanes).
template <typename A, typename T>
static inline A ce_row_max(const T *x, int64_t n) {
  constexpr int kLanes = 32;
  A m = A(x[0]);
  int64_t j = 0;
  if (n >= kLanes) {
    A lane[kLanes];
    for (int k = 0; k < kLanes; ++k) lane[k] = m;
    for (; j + kLanes <= n; j += kLanes)
      for (int k = 0; k < kLanes; ++k) lane[k] = A(x[j + k]) > lane[k] ? A(x[j + k]) : lane[k];
    for (int k = 0; k < kLanes; ++k) m = lane[k] > m ? lane[k] : m;
  }
  for (; j < n; ++j) m = A(x[j]) > m ? A(x[j]) : m;
  return m;
}

// The row's maximum and sum of exp(x - max), in the compute type A.  The
// exponents only feed the sum: vsum_exp_below's cheaper exp (no stores, no
// overflow or subnormal handling; 4.3 G exp/s per core against 2.2 for
// exp1 on this VM's AVX-512 EPYC) within the same 1 ulp.
template <typename A, typename T>
static inline void ce_row_stats(const T *x, int64_t n, A *mx, A *sum) {
  const A m = ce_row_max<A>(x, n);
  const A s = vsum_exp_below(x, n, m, A(1));
  *mx = m;
  *sum = s;
}

template <typename T>
static void softmax_ce_fwd(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &xb = c->inputs[0];
  const T *x = static_cast<const T *>(xb.dptr);
  const T *label = static_cast<const T *>(c->inputs[1].dptr);
  const int64_t rows = xb.shape[0], n = xb.shape[1];
  std::vector<A> loss(size_t(rows > 0 ? rows : 0));
  if (n > 0) {
    team_for_cost(rows, n, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T *row = x + r * n;
        A m, s;
        ce_row_stats<A>(row, n, &m, &s);
        loss[r] = std::log(s) - (A(row[ce_class(double(label[r]), n)]) - m);
      }
    });
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += double(loss[r]);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  MX_REQ_DISPATCH(c->req[0], nn_store<ADD>(out, 0, A(total)));
}

template <bool ADD, typename T>
static void softmax_ce_bwd_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &xb = c->inputs[1];
  const A g = A(static_cast<const T *>(c->inputs[0].dptr)[0]);
  const T *x = static_cast<const T *>(xb.dptr);
  const T *label = static_cast<const T *>(c->inputs[2].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int64_t rows = xb.shape[0], n = xb.shape[1];
  if (n == 0) return;
  team_for_cost(rows, n, [&](int64_t b, int64_t e) {
    alignas(64) A buf[kCeChunk];
    for (int64_t r = b; r < e; ++r) {
      const T *row = x + r * n;
      T *drow = dx + r * n;
      const int64_t k = ce_class(double(label[r]), n);
      if constexpr (sizeof(A) == sizeof(T) && !ADD) {
        // One exp pass: the exponents go to the gradient's row, then scale.
        const A m = ce_row_max<A>(row, n);
        const A scale = g / vexp_shift_sum_below(row, drow, n, m, A(1));
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) drow[j] *= scale;
        drow[k] -= g;
        continue;
      }
      A m, s;
      ce_row_stats<A>(row, n, &m, &s);
      const A scale = g / s;
      for (int64_t j0 = 0; j0 < n; j0 += kCeChunk) {
        const int64_t len = n - j0 < kCeChunk ? n - j0 : kCeChunk;
        for (int64_t j = 0; j < len; ++j) buf[j] = A(row[j0 + j]);
        vexp_shift_sum_below(buf, buf, len, m, A(1));
        for (int64_t j = 0; j < len; ++j) nn_store<ADD>(drow, j0 + j, A(buf[j] * scale));
      }
      drow[k] = T(A(drow[k]) - g);
    }
  });
}

// Inputs (data, label); output (1,).
static int softmax_ce_forward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, softmax_ce_fwd<T>(c))
  return 0;
}

// Inputs (out_grad, data, label); outputs (data_grad, label_grad).
static int softmax_ce_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[1].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (softmax_ce_bwd_loop<ADD, T>(c)));
                  if (c->req[1] == MX_REQ_WRITE || c->req[1] == MX_REQ_INPLACE) {
                    T *dl = static_cast<T *>(c->outputs[1].dptr);
                    for (int64_t i = 0; i < mx_tblob_size(&c->outputs[1]); ++i) dl[i] = T(0);
                  })
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SOFTMAX_CE_CPU_H_
