// LayerNorm, GroupNorm and InstanceNorm on the CPU: each normalizes rows.
// The data is seen as (outer, n, inner): row r = (o, i) holds the n elements
// x[(o * n + k) * inner + i], k = 0 .. n-1, and gets its own mean and
// variance (biased).
//   LayerNorm:    (outer, n, inner) around 'axis'; gamma, beta indexed by k.
//   GroupNorm:    (N * G, C/G * spatial, 1); gamma, beta by the group r % G.
//   InstanceNorm: (N * C, spatial, 1); gamma, beta by the channel r % C.
// y = (x - mean) / sqrt(var + eps) * gamma + beta; the saved statistic is
// std = sqrt(var + eps) (LayerNorm, GroupNorm) or var (InstanceNorm).
//
// A row's statistics come from one pass of sums shifted by its first
// element (a second, corrected two-pass, when that element is far from the
// mean: row_norm_isa.h), summed in runs of kRnRun elements in the compute
// type whose totals add up in double; the row stays in cache for the
// output's pass, so the forward reads the data from memory once.  Rows are
// split across the workers.
//
// Backward, with xhat = (x - mean) / std, g = dy * gamma and row means:
//   dx = (g - mean(g) - xhat * mean(g * xhat)) / std
//   dgamma = sum of dy * xhat, dbeta = sum of dy (over the rows, per k for
//   LayerNorm, per group/channel for GroupNorm/InstanceNorm).
#ifndef MX_OPS_ROW_NORM_CPU_H_
#define MX_OPS_ROW_NORM_CPU_H_

#include <cmath>
#include <cstdint>

#include "isa.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.norm.row_norm (RowNormParam).
struct RowNormParam {
  int64_t outer, n, inner;
  int64_t per_row;         // 0: gamma/beta indexed by k; P > 0: by the row r % P
  double eps;
  int32_t save_var;        // the saved statistic is var (InstanceNorm), else std
  int32_t reserved;
};

// Blocks of rows whose dgamma/dbeta partial sums (per k) are kept apart and
// folded in block order, so that the result does not depend on the thread
// count: at most kRnMaxBlocks, of at least kRnMinBlockRows rows (a block
// pays O(n) to clear and fold its sums).  Python's workspace size agrees.
constexpr int64_t kRnMaxBlocks = 32;
constexpr int64_t kRnMinBlockRows = 16;

// Rows a block sums in the compute type before adding into its double sums.
constexpr int64_t kRnFlush = 64;

static inline int64_t rn_blocks(int64_t rows) {
  const int64_t nb = (rows + kRnMinBlockRows - 1) / kRnMinBlockRows;
  return nb < kRnMaxBlocks ? nb : kRnMaxBlocks;
}

// Doubles of workspace the backward needs: per block, per-k sums of dgamma
// and dbeta in double and in the compute type (LayerNorm), or two sums per
// row (per-row parameters).
static inline int64_t row_norm_workspace_doubles(int64_t outer, int64_t n, int64_t inner,
                                                 int64_t per_row) {
  const int64_t rows = outer * inner;
  return per_row ? 2 * rows : 4 * rn_blocks(rows) * n;
}

struct RnStats { double mean, var, rstd; };

// Elements summed in the compute type before the sums move to double
// (two-level sums: short vectorised runs in float, their totals in double).
constexpr int64_t kRnRun = 256;
// How many standard deviations from the mean a row's first element may lie
// for the one-pass shifted variance (which loses about 2 log2 of it in
// bits) to stand.
constexpr double kRnShiftTrust = 2.0;

}  // namespace mxop

// The row loops, once per instruction set (isa.h).
#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define MX_RN_NS rn_avx512
#include "row_norm_isa.h"
#undef MX_RN_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define MX_RN_NS rn_avx2
#include "row_norm_isa.h"
#undef MX_RN_NS
#pragma GCC pop_options
#endif

#define MX_RN_NS rn_generic
#include "row_norm_isa.h"
#undef MX_RN_NS

namespace mxop {

// Calls FN (a function of row_norm_isa.h) in the copy for this CPU.
#if MX_MULTI_ISA
#define MX_RN_CALL(FN, ...)                                        \
  do {                                                             \
    switch (cpu_isa()) {                                           \
      case ISA_AVX512: rn_avx512::FN(__VA_ARGS__); break;          \
      case ISA_AVX2: rn_avx2::FN(__VA_ARGS__); break;              \
      default: rn_generic::FN(__VA_ARGS__);                        \
    }                                                              \
  } while (0)
#else
#define MX_RN_CALL(FN, ...) rn_generic::FN(__VA_ARGS__)
#endif

template <typename T>
static int rn_forward_typed(MXOpCall *c) {
  const RowNormParam &p = *static_cast<const RowNormParam *>(c->params);
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  const T *gamma = static_cast<const T *>(c->inputs[1].dptr);
  const T *beta = static_cast<const T *>(c->inputs[2].dptr);
  T *y = static_cast<T *>(c->outputs[0].dptr);
  T *mean = static_cast<T *>(c->outputs[1].dptr);
  T *sd = static_cast<T *>(c->outputs[2].dptr);
  const int32_t rm = c->req[1], rsd = c->req[2];
  const int64_t rows = p.outer * p.inner;
  parallel_for_cost(rows, 2 * p.n, [&](int64_t r0, int64_t r1) {
    if (c->req[0] == MX_REQ_ADD)
      MX_RN_CALL(rn_forward_rows<true>, p, x, gamma, beta, y, mean, sd, rm, rsd, r0, r1);
    else
      MX_RN_CALL(rn_forward_rows<false>, p, x, gamma, beta,
                 c->req[0] == MX_REQ_NULL ? nullptr : y, mean, sd, rm, rsd, r0, r1);
  });
  return 0;
}

template <typename T>
static int rn_backward_typed(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const RowNormParam &p = *static_cast<const RowNormParam *>(c->params);
  const T *dy = static_cast<const T *>(c->inputs[0].dptr);
  const T *x = static_cast<const T *>(c->inputs[1].dptr);
  const T *gamma = static_cast<const T *>(c->inputs[2].dptr);
  const T *mean = static_cast<const T *>(c->inputs[3].dptr);
  const T *saved = static_cast<const T *>(c->inputs[4].dptr);
  T *dx = c->req[0] == MX_REQ_NULL ? nullptr : static_cast<T *>(c->outputs[0].dptr);
  T *dgamma = static_cast<T *>(c->outputs[1].dptr);
  T *dbeta = static_cast<T *>(c->outputs[2].dptr);
  const int64_t rows = p.outer * p.inner, n = p.n;
  const int64_t P = p.per_row ? p.per_row : n;        // length of gamma
  const int64_t nb = rn_blocks(rows);
  double *ws = static_cast<double *>(c->workspace);
  auto row = [&](A *dg, A *db, int64_t r) {
    const double s = double(saved[r]);
    const double rstd = p.save_var ? 1.0 / std::sqrt(s + p.eps) : 1.0 / s;
    if (c->req[0] == MX_REQ_ADD)
      MX_RN_CALL(rn_backward_row<true>, p, dy, x, gamma, double(mean[r]), rstd, dx, dg, db,
                 ws, r);
    else
      MX_RN_CALL(rn_backward_row<false>, p, dy, x, gamma, double(mean[r]), rstd, dx, dg, db,
                 ws, r);
  };
  if (p.per_row) {
    // Two sums per row in the workspace, folded per group/channel below.
    parallel_for_cost(rows, 3 * n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) row(nullptr, nullptr, r);
    });
  } else {
    // Blocks of rows, each with per-k sums in double (sum, then beta's)
    // and in the compute type, flushed into the double ones every
    // kRnFlush rows.
    const int64_t per = nb ? (rows + nb - 1) / nb : 0;
    parallel_for_cost(nb, 3 * per * n, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double *sum = ws + 4 * b * n;
        A *dg = reinterpret_cast<A *>(sum + 2 * n), *db = dg + n;
        for (int64_t k = 0; k < 2 * n; ++k) sum[k] = 0;
        const int64_t r1 = (b + 1) * per < rows ? (b + 1) * per : rows;
        for (int64_t r0 = b * per; r0 < r1; r0 += kRnFlush) {
          for (int64_t k = 0; k < 2 * n; ++k) dg[k] = 0;
          const int64_t re = r0 + kRnFlush < r1 ? r0 + kRnFlush : r1;
          for (int64_t r = r0; r < re; ++r) row(dg, db, r);
          for (int64_t k = 0; k < 2 * n; ++k) sum[k] += double(dg[k]);
        }
      }
    });
  }
  for (int64_t j = 0; j < P; ++j) {
    double dg_sum = 0, db_sum = 0;
    if (p.per_row) {
      for (int64_t r = j; r < rows; r += P) {
        dg_sum += ws[2 * r];
        db_sum += ws[2 * r + 1];
      }
    } else {
      for (int64_t b = 0; b < nb; ++b) {
        dg_sum += ws[4 * b * n + j];
        db_sum += ws[4 * b * n + n + j];
      }
    }
    nn_put(dgamma, j, dg_sum, c->req[1]);
    nn_put(dbeta, j, db_sum, c->req[2]);
  }
  return 0;
}

// Inputs (data, gamma, beta); outputs (output, mean, std or var).
static int row_norm_forward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return rn_forward_typed<T>(c));
  return 0;
}

// Inputs (out_grad, data, gamma, mean, std or var); outputs (data_grad,
// gamma_grad, beta_grad).
static int row_norm_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return rn_backward_typed<T>(c));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ROW_NORM_CPU_H_
