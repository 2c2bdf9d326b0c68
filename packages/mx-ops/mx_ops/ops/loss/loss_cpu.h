// The backward kernels of the output (loss) operators: SoftmaxOutput, the
// regression outputs and MakeLoss.  Their forwards are kernels that exist
// already (softmax_cpu.h, the elementwise copy and sigmoid).
//
// These gradients are those of the loss each operator stands for, not of
// its forward output: out_grad is not read (SoftmaxOutput multiplies by it
// only with out_grad=True), as in MXNet 1.x.
//   SoftmaxOutput, label of class indices:
//     (softmax - one_hot(label), smoothed by smooth_alpha) * scale,
//     rows whose label is ignore_label zeroed with use_ignore
//   SoftmaxOutput, label of data's shape (probabilities):
//     (softmax - label) * grad_scale
//   regression: (out - label) * scale, or MXNet's minus_sign for MAE
//   MakeLoss:   grad_scale / the normalizer, everywhere
// Every input gradient honours its req; label gradients are zero.
#ifndef MX_OPS_LOSS_CPU_H_
#define MX_OPS_LOSS_CPU_H_

#include <cstdint>
#include <limits>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// A label value as MXNet's static_cast<int> reads it; NaN and values no
// int64 holds (undefined in C) map to a class that matches nothing.
static inline int64_t label_class(double v) {
  if (!(v > -9.2e18 && v < 9.2e18)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Packed by mx_ops.ops.loss.softmax_output: data seen as (outer, n classes, inner),
// one label per row r = o * inner + i (rows = outer * inner).
struct SoftmaxOutParam {
  int64_t outer, n, inner;
  int64_t nlabel;           // elements of label ('valid' counts over all)
  double scale;             // grad_scale over the normalizer known from shapes
  double ignore_label, smooth_alpha;
  int32_t prob_label;       // label has data's shape: probabilities
  int32_t use_ignore;
  int32_t valid_norm;       // divide by the labels that are not ignore_label
  int32_t out_grad;         // inputs start with out_grad, which multiplies
};

// Zeros, or nothing for req add / null: the gradient of a label.
template <typename T>
static void zero_grad(const MXTBlob &b, int32_t req) {
  if (req != MX_REQ_WRITE && req != MX_REQ_INPLACE) return;
  T *p = static_cast<T *>(b.dptr);
  const int64_t n = mx_tblob_size(&b);
  parallel_for(n, [&](int64_t s, int64_t e) { for (int64_t i = s; i < e; ++i) p[i] = T(0); });
}

template <bool ADD, typename T>
static void softmax_out_bwd_loop(const MXOpCall *c, const SoftmaxOutParam &p) {
  typedef typename NnAcc<T>::type A;
  const int k0 = p.out_grad ? 1 : 0;
  const T *og = p.out_grad ? static_cast<const T *>(c->inputs[0].dptr) : nullptr;
  const T *label = static_cast<const T *>(c->inputs[k0].dptr);
  const T *out = static_cast<const T *>(c->inputs[k0 + 1].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = p.n, inner = p.inner;
  if (p.prob_label) {
    const A scale = A(p.scale);
    parallel_for(p.outer * n * inner, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        A v = (A(out[i]) - A(label[i])) * scale;
        if (og) v *= A(og[i]);
        nn_store<ADD>(dx, i, v);
      }
    });
    return;
  }
  const int64_t ignore = label_class(p.ignore_label);
  double scale = p.scale;
  if (p.valid_norm) {         // MXNet counts with or without use_ignore
    int64_t valid = 0;
    for (int64_t i = 0; i < p.nlabel; ++i) valid += label_class(double(label[i])) != ignore;
    scale /= double(valid > 0 ? valid : 1);
  }
  const A s = A(scale), alpha = A(p.smooth_alpha);
  const A off = n > 1 ? A(p.smooth_alpha / double(n - 1)) : A(0);   // smoothed 0s
  parallel_for_cost(p.outer * inner, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      const int64_t k = label_class(double(label[r]));
      const bool skip = p.use_ignore && k == ignore;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t i = base + j * inner;
        A v = skip ? A(0) : (A(out[i]) - (j == k ? A(1) - alpha : off)) * s;
        if (og) v *= A(og[i]);
        nn_store<ADD>(dx, i, v);
      }
    }
  });
}

// Inputs ([out_grad,] label, out_data), outputs (data_grad, label_grad).
static int softmax_output_backward(MXOpCall *c) {
  const SoftmaxOutParam &p = *static_cast<const SoftmaxOutParam *>(c->params);
  MX_FLOAT_SWITCH(c->outputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (softmax_out_bwd_loop<ADD, T>(c, p)));
                  zero_grad<T>(c->outputs[1], c->req[1]))
  return 0;
}

// Packed by mx_ops.ops.loss.loss: grad_scale / num_output, and which difference.
struct RegressionParam { double scale; int32_t mae; int32_t pad_; };

template <bool ADD, typename T>
static void regression_bwd_loop(const MXOpCall *c, const RegressionParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *label = static_cast<const T *>(c->inputs[0].dptr);
  const T *out = static_cast<const T *>(c->inputs[1].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const A scale = A(p.scale);
  parallel_for(mx_tblob_size(&c->outputs[0]), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const A d = A(out[i]) - A(label[i]);
      // MXNet's minus_sign: -1 where out == label, not 0
      nn_store<ADD>(dx, i, (p.mae ? (d > A(0) ? A(1) : A(-1)) : d) * scale);
    }
  });
}

// Inputs (label, out_data), outputs (data_grad, label_grad); label has
// data's number of elements (its shape may differ: (n,) for (n, 1)).
static int regression_backward(MXOpCall *c) {
  const RegressionParam &p = *static_cast<const RegressionParam *>(c->params);
  MX_FLOAT_SWITCH(c->outputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (regression_bwd_loop<ADD, T>(c, p)));
                  zero_grad<T>(c->outputs[1], c->req[1]))
  return 0;
}

// Packed by mx_ops.ops.loss.loss: grad_scale (already over the batch size for
// 'batch'), and for 'valid' the threshold whose exceeders divide it.
struct MakeLossParam { double scale, valid_thresh; int32_t valid; int32_t pad_; };

template <bool ADD, typename T>
static void make_loss_bwd_loop(const MXOpCall *c, const MakeLossParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int64_t size = mx_tblob_size(&c->outputs[0]);
  double scale = p.scale;
  if (p.valid) {
    int64_t valid = 0;
    for (int64_t i = 0; i < size; ++i) valid += double(x[i]) > p.valid_thresh;
    scale /= double(valid > 0 ? valid : 1);
  }
  const A v = A(scale);
  parallel_for(size, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) nn_store<ADD>(dx, i, v);
  });
}

// Inputs (data), outputs (data_grad).
static int make_loss_backward(MXOpCall *c) {
  const MakeLossParam &p = *static_cast<const MakeLossParam *>(c->params);
  MX_FLOAT_SWITCH(c->outputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (make_loss_bwd_loop<ADD, T>(c, p))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_LOSS_CPU_H_
