// SVMOutput's backward on the CPU (MXNet's svm_output-inl.h).  The output
// (a copy of the data) is seen as (rows, cols) = (all axes but the last,
// the last), MXNet's FlatTo2D; row y has class k = int(label[y]), and with
// m = margin, c = regularization_coefficient, o = output[y][x]:
//   L1 (use_linear):  x == k: -[m > o] * c          else: [m > -o] * c
//   L2:               x == k: -c * 2 (m - o) if m > o  else: c * 2 (m + o) if m > -o
// (0 where the bracket fails).  out_grad is not read; the label's gradient is 0.
#ifndef MX_OPS_SVM_CPU_H_
#define MX_OPS_SVM_CPU_H_

#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.loss.svm_output (SvmParam).
struct SvmParam {
  int64_t rows, cols;
  double margin, coef;
  int32_t use_linear, reserved;
};

template <bool ADD, typename T>
static void svm_backward_rows(const SvmParam &p, const T *label, const T *out, T *dx) {
  typedef typename NnAcc<T>::type A;
  // The parameters in the data type, as MXNet's DType(param_.margin).
  const A m = A(T(p.margin)), c = A(T(p.coef));
  const int64_t cols = p.cols;
  parallel_for_cost(p.rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t y = r0; y < r1; ++y) {
      const int64_t k = static_cast<int>(label[y]);
      const T *o = out + y * cols;
      T *d = dx + y * cols;
      if (p.use_linear) {
        for (int64_t x = 0; x < cols; ++x) {
          const A v = A(o[x]);
          nn_store<ADD>(d, x, x == k ? A(-A(m > v) * c) : A(A(m > -v) * c));
        }
      } else {
        for (int64_t x = 0; x < cols; ++x) {
          const A v = A(o[x]);
          const A g = x == k ? (m > v ? A(2) * (m - v) : A(0)) * -c
                             : (m > -v ? A(-2) * (m + v) : A(0)) * -c;
          nn_store<ADD>(d, x, g);
        }
      }
    }
  });
}

// Inputs (label, out_data); outputs (data_grad, label_grad).
template <typename T>
static int svm_backward_typed(MXOpCall *c) {
  const SvmParam &p = *static_cast<const SvmParam *>(c->params);
  const T *label = static_cast<const T *>(c->inputs[0].dptr);
  const T *out = static_cast<const T *>(c->inputs[1].dptr);
  MX_REQ_DISPATCH(c->req[0],
                  (svm_backward_rows<ADD, T>(p, label, out, static_cast<T *>(c->outputs[0].dptr))));
  if (c->req[1] != MX_REQ_NULL && c->req[1] != MX_REQ_ADD) {
    T *dl = static_cast<T *>(c->outputs[1].dptr);
    const int64_t n = mx_tblob_size(&c->outputs[1]);
    for (int64_t i = 0; i < n; ++i) dl[i] = T(0);
  }
  return 0;
}

static int svm_output_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[1].dtype, T, return svm_backward_typed<T>(c));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SVM_CPU_H_
