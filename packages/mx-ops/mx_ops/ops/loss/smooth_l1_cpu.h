// smooth_l1, MXNet's smooth l1 loss, as SimpleOp functions
// (include/mx_ops/simple_op.h) with sigma = env->scalar:
//   f(x)  = 0.5 (sigma x)^2       if |x| < 1 / sigma^2,  else |x| - 0.5 / sigma^2
//   f'(x) = sigma^2 x             if |x| < 1 / sigma^2,  else sign(x)
// mshadow_op's smooth_l1_loss / smooth_l1_gradient, branch for branch, so
// results agree with MXNet at the turning points.  The GPU twin
// (mx_ops/ops/loss/_smooth_l1_gpu.py) computes the same expressions.
#ifndef MX_OPS_SMOOTH_L1_CPU_H_
#define MX_OPS_SMOOTH_L1_CPU_H_

#include <cstdint>

#include "mx_ops/simple_op.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

template <typename A>
static inline A smooth_l1_value(A x, A s2) {
  if (x > A(1) / s2) return x - A(0.5) / s2;
  if (x < A(-1) / s2) return -x - A(0.5) / s2;
  return A(0.5) * x * x * s2;
}

template <typename A>
static inline A smooth_l1_slope(A x, A s2) {
  if (x > A(1) / s2) return A(1);
  if (x < A(-1) / s2) return A(-1);
  return s2 * x;
}

template <bool ADD, typename T>
static void smooth_l1_fwd_loop(const T *x, T *y, int64_t n, double sigma) {
  typedef typename NnAcc<T>::type A;
  const A s2 = A(sigma * sigma);
  parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) nn_store<ADD>(y, i, smooth_l1_value(A(x[i]), s2));
  });
}

// in_grad may be out_grad's memory (kInplaceOutIn): element i is read
// before it is written.
template <bool ADD, typename T>
static void smooth_l1_bwd_loop(const T *g, const T *x, T *dx, int64_t n, double sigma) {
  typedef typename NnAcc<T>::type A;
  const A s2 = A(sigma * sigma);
  parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) nn_store<ADD>(dx, i, A(g[i]) * smooth_l1_slope(A(x[i]), s2));
  });
}

// MXUnaryFunction
static int smooth_l1_forward(const MXTBlob *src, const MXEnvArguments *env, const MXTBlob *ret,
                             int32_t req, MXRunContext *c) {
  const int64_t n = mx_tblob_size(ret);
  MX_FLOAT_SWITCH(src->dtype, T, MX_REQ_DISPATCH(req, (smooth_l1_fwd_loop<ADD, T>(
      static_cast<const T *>(src->dptr), static_cast<T *>(ret->dptr), n, env->scalar))));
  return 0;
}

// MXUnaryGradFunctionT2: reads the input.
static int smooth_l1_backward(const MXTBlob *out_grad, const MXTBlob *in_data0,
                              const MXEnvArguments *env, const MXTBlob *in_grad, int32_t req,
                              MXRunContext *c) {
  const int64_t n = mx_tblob_size(in_grad);
  MX_FLOAT_SWITCH(in_data0->dtype, T, MX_REQ_DISPATCH(req, (smooth_l1_bwd_loop<ADD, T>(
      static_cast<const T *>(out_grad->dptr), static_cast<const T *>(in_data0->dptr),
      static_cast<T *>(in_grad->dptr), n, env->scalar))));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SMOOTH_L1_CPU_H_
