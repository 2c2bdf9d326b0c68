// softmax and log_softmax along one axis, forward and backward.
//
// The array is seen as (outer, n, inner) around the axis; each of the
// outer*inner rows (stride `inner`) is independent, so rows are split
// across cores.  Forward subtracts the row's maximum before exp, so no
// input overflows (MXNet does the same); sums run in the compute type
// (float for float16, as MXNet's AType).
//   softmax:      y = exp((x - max)/T) / sum
//   log_softmax:  y = (x - max)/T - log(sum)
// Backward takes (out_grad, out_data), MXNet's convention:
//   softmax:      dx = y * (g - sum(g * y)) / T
//   log_softmax:  dx = (g - exp(y) * sum(g)) / T
#ifndef MX_OPS_SOFTMAX_CPU_H_
#define MX_OPS_SOFTMAX_CPU_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.nn_act: the (outer, n, inner) view and the temperature.
struct SoftmaxParam { int64_t outer, n, inner; double temperature; int32_t log; int32_t pad_; };

template <bool ADD, typename T>
static void softmax_fwd_loop(const MXOpCall *c, const SoftmaxParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *y = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = p.n, inner = p.inner;
  const A inv_t = A(1.0 / p.temperature);
  parallel_for_cost(p.outer * inner, n, [&](int64_t b, int64_t e) {
    // The row's shifted exponents, computed once: exp dominates the cost,
    // and y cannot hold them (req 'add' keeps old values there).
    std::vector<A> ex(n);
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      A mx = A(x[base]);
      for (int64_t j = 1; j < n; ++j) {
        const A v = A(x[base + j * inner]);
        if (v > mx) mx = v;
      }
      A sum = A(0);
      for (int64_t j = 0; j < n; ++j) {
        ex[j] = (A(x[base + j * inner]) - mx) * inv_t;
        ex[j] = p.log ? ex[j] : std::exp(ex[j]);
      }
      if (p.log) {
        for (int64_t j = 0; j < n; ++j) sum += std::exp(ex[j]);
        const A ls = std::log(sum);
        for (int64_t j = 0; j < n; ++j) nn_store<ADD>(y, base + j * inner, A(ex[j] - ls));
      } else {
        for (int64_t j = 0; j < n; ++j) sum += ex[j];
        const A inv = A(1) / sum;
        for (int64_t j = 0; j < n; ++j) nn_store<ADD>(y, base + j * inner, A(ex[j] * inv));
      }
    }
  });
}

template <bool ADD, typename T>
static void softmax_bwd_loop(const MXOpCall *c, const SoftmaxParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  const T *y = static_cast<const T *>(c->inputs[1].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = p.n, inner = p.inner;
  const A inv_t = A(1.0 / p.temperature);
  parallel_for_cost(p.outer * inner, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      A dot = A(0);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t i = base + j * inner;
        dot += p.log ? A(g[i]) : A(g[i]) * A(y[i]);
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t i = base + j * inner;
        const A v = p.log ? A(g[i]) - std::exp(A(y[i])) * dot : A(y[i]) * (A(g[i]) - dot);
        nn_store<ADD>(dx, i, A(v * inv_t));
      }
    }
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
