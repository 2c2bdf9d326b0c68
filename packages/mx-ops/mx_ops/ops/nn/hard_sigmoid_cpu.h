// hard_sigmoid and its backward on the CPU (MXNet's
// elemwise_unary_op_basic.cc), with z = alpha * x + beta in the compute type
// (float for float16; alpha and beta are float32 parameters):
//   y = min(1, max(0, z)),   dx = (0 < z < 1) ? dy * alpha : 0.
#ifndef MX_OPS_HARD_SIGMOID_CPU_H_
#define MX_OPS_HARD_SIGMOID_CPU_H_

#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.nn.hard_sigmoid (HardSigmoidParam).
struct HardSigmoidParam { float alpha, beta; };

template <bool ADD, typename T>
static void hard_sigmoid_loop(const MXOpCall *c, const HardSigmoidParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *y = static_cast<T *>(c->outputs[0].dptr);
  const A a = A(p.alpha), b = A(p.beta);
  parallel_for(mx_tblob_size(&c->inputs[0]), [&](int64_t i0, int64_t i1) {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) {
      const A z = a * A(x[i]) + b;
      nn_store<ADD>(y, i, z < A(0) ? A(0) : (z > A(1) ? A(1) : z));
    }
  });
}

// Inputs (out_grad, data); output data_grad.
template <bool ADD, typename T>
static void hard_sigmoid_grad_loop(const MXOpCall *c, const HardSigmoidParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *dy = static_cast<const T *>(c->inputs[0].dptr);
  const T *x = static_cast<const T *>(c->inputs[1].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const A a = A(p.alpha), b = A(p.beta);
  parallel_for(mx_tblob_size(&c->inputs[1]), [&](int64_t i0, int64_t i1) {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) {
      const A z = a * A(x[i]) + b;
      nn_store<ADD>(dx, i, (z > A(0) && z < A(1)) ? A(dy[i]) * a : A(0));
    }
  });
}

static int hard_sigmoid_forward(MXOpCall *c) {
  const HardSigmoidParam &p = *static_cast<const HardSigmoidParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (hard_sigmoid_loop<ADD, T>(c, p))));
  return 0;
}

static int hard_sigmoid_backward(MXOpCall *c) {
  const HardSigmoidParam &p = *static_cast<const HardSigmoidParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[1].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (hard_sigmoid_grad_loop<ADD, T>(c, p))));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_HARD_SIGMOID_CPU_H_
