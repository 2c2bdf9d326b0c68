// The optimizer updates with a row_sparse gradient (MXNet 1.x's
// SGDDnsRspKernel, SGDMomDnsRspDnsKernel, AdamDnsRspDnsKernel, their
// "Std" twins, FtrlDnsRspDnsKernel and AdagradDnsRspDnsKernel), on a dense
// weight table of `rows` rows of `width` elements and its dense states, all
// updated in place.  (A row_sparse weight with every row stored is this
// table: the caller passes its values.)  The element step is opt_step of
// optimizer_cpu.h, so the touched elements get exactly the dense update.
//   lazy:     only the gradient's rows change (weight decay, momentum, the
//             moments, clipping included): one pass over the nnz rows.
//   not lazy: every row takes the standard step, with a zero gradient
//             where the gradient stores no row: one pass over all rows,
//             each thread finding its first gradient row by binary search.
//             (SGD rounds as MXNet's two passes do: see below.)
// The gradient's indices must be sorted, unique and in range (the caller
// checks).  Large updates are split across threads by rows.
#ifndef MX_OPS_OPTIMIZER_RSP_CPU_H_
#define MX_OPS_OPTIMIZER_RSP_CPU_H_

#include <algorithm>
#include <cstdint>

#include "optimizer_cpu.h"

namespace mxop {

struct RspUpdate {
  void *weight, *s0, *s1;     // (rows, width) each; s0, s1 null where the op has fewer states
  const void *grad;           // (nnz, width): the gradient's stored rows
  const int64_t *idx;         // (nnz,): their row numbers
  int64_t rows, width, nnz;
  int32_t dtype, lazy;
};

// One row of `width` elements; the pointers are the row's and never alias
// (weight, gradient and states are distinct arrays), which lets the
// compiler vectorize the step.
template <int KIND, typename A, typename T>
static inline void opt_row(const OptParam &p, T *__restrict w, const T *__restrict g,
                           T *__restrict s0, T *__restrict s1, int64_t width) {
  for (int64_t j = 0; j < width; ++j)
    w[j] = T(opt_step<KIND, A, T>(p, A(w[j]), A(g[j]), s0, s1, j));
}

template <int KIND, typename T>
static void opt_rsp_rows(const OptParam &p, const RspUpdate &u) {
  typedef typename NnAcc<T>::type A;
  T *w = static_cast<T *>(u.weight);
  T *s0 = static_cast<T *>(u.s0);
  T *s1 = static_cast<T *>(u.s1);
  const T *g = static_cast<const T *>(u.grad);
  const int64_t *idx = u.idx;
  const int64_t width = u.width, nnz = u.nnz;
  if (u.lazy) {
    parallel_for_cost(nnz, width, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t base = idx[k] * width;
        opt_row<KIND, A, T>(p, w + base, g + k * width, s0 ? s0 + base : nullptr,
                            s1 ? s1 + base : nullptr, width);
      }
    });
    return;
  }
  // SGD's standard step is MXNet's two passes: every row scaled by
  // 1 - lr*wd (computed in float32 whatever the dtype), then the lazy step
  // without weight decay on the gradient's rows.
  OptParam no_wd = p;
  no_wd.wd = 0;
  const A decay = A(1.0f - float(p.lr) * float(p.wd));
  parallel_for_cost(u.rows, width, [&](int64_t b, int64_t e) {
    int64_t k = std::lower_bound(idx, idx + nnz, b) - idx;
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = r * width;
      const bool present = k < nnz && idx[k] == r;
      if constexpr (KIND == kSgd) {
        const T *gk = present ? g + k * width : nullptr;
        for (int64_t j = 0; j < width; ++j) {
          const T scaled = T(decay * A(w[base + j]));
          w[base + j] = present ? T(opt_step<KIND, A, T>(no_wd, A(scaled), A(gk[j]), s0, s1,
                                                          base + j))
                                : scaled;
        }
        k += present;
      } else if (present) {
        opt_row<KIND, A, T>(p, w + base, g + k * width, s0 ? s0 + base : nullptr,
                            s1 ? s1 + base : nullptr, width);
        ++k;
      } else {
        for (int64_t j = 0; j < width; ++j)
          w[base + j] = T(opt_step<KIND, A, T>(p, A(w[base + j]), A(0), s0, s1, base + j));
      }
    }
  });
}

template <typename T>
static int opt_rsp_kind(const OptParam &p, const RspUpdate &u) {
  switch (p.kind) {
    case kSgd: opt_rsp_rows<kSgd, T>(p, u); return 0;
    case kSgdMom: opt_rsp_rows<kSgdMom, T>(p, u); return 0;
    case kAdam: opt_rsp_rows<kAdam, T>(p, u); return 0;
    case kFtrl: opt_rsp_rows<kFtrl, T>(p, u); return 0;
    case kAdagrad: opt_rsp_rows<kAdagrad, T>(p, u); return 0;
    default: return -1;
  }
}

// 0, or -1 for an optimizer kind or dtype without a row_sparse update.
static inline int optimizer_rsp_update(const OptParam *p, const RspUpdate *u) {
  switch (u->dtype) {
    case MX_FLOAT32: return opt_rsp_kind<float>(*p, *u);
    case MX_FLOAT64: return opt_rsp_kind<double>(*p, *u);
    case MX_FLOAT16: return opt_rsp_kind<half_t>(*p, *u);
    default: return -1;
  }
}

}  // namespace mxop
#endif  // MX_OPS_OPTIMIZER_RSP_CPU_H_
