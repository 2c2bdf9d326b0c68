// L2Normalization, forward and backward.
//
// The data is seen as (outer, n, inner) with the norm taken over n:
// 'instance' (batch, everything else, 1), 'channel' (batch, channels,
// spatial), 'spatial' (batch * channels, spatial, 1).  There is one norm
// per (outer, inner) pair, at o * inner + i, which is exactly the layout of
// MXNet's norm output in each mode.
//   norm = sqrt(sum_n x^2 + eps)      y = x / norm
// Backward takes (out_grad, out_data, norm), MXNet's dependencies:
//   dx = (g - y * sum_n(g * y)) / norm
// Each block of one `o` is owned by one thread; it sums along n into a
// buffer of `inner` partial sums, so every mode walks memory in order.
#ifndef MX_OPS_L2NORM_CPU_H_
#define MX_OPS_L2NORM_CPU_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.layer.l2_normalization.
struct L2NormParam { int64_t outer, n, inner; double eps; };

template <bool ADD, bool ADD_NORM, typename T>
static void l2norm_fwd_loop(const MXOpCall *c, const L2NormParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *y = static_cast<T *>(c->outputs[0].dptr);
  T *norm = static_cast<T *>(c->outputs[1].dptr);
  const int64_t n = p.n, inner = p.inner;
  const bool out = c->req[0] != MX_REQ_NULL, keep_norm = c->req[1] != MX_REQ_NULL;
  parallel_for_cost(p.outer, n * inner, [&](int64_t b, int64_t e) {
    std::vector<A> acc(inner);
    for (int64_t o = b; o < e; ++o) {
      const int64_t base = o * n * inner;
      for (int64_t i = 0; i < inner; ++i) acc[i] = A(0);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const A v = A(x[base + j * inner + i]);
          acc[i] += v * v;
        }
      for (int64_t i = 0; i < inner; ++i) {
        acc[i] = std::sqrt(A(acc[i] + A(p.eps)));
        if (keep_norm) nn_store<ADD_NORM>(norm, o * inner + i, acc[i]);
      }
      if (out)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = base + j * inner + i;
            nn_store<ADD>(y, k, A(A(x[k]) / acc[i]));
          }
    }
  });
}

// Inputs (data), outputs (output, norm).
static int l2norm_forward(MXOpCall *c) {
  const L2NormParam &p = *static_cast<const L2NormParam *>(c->params);
  if (c->req[0] == MX_REQ_NULL && c->req[1] == MX_REQ_NULL) return 0;
  const bool add_norm = c->req[1] == MX_REQ_ADD;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
    if (c->req[0] == MX_REQ_ADD) {
      if (add_norm) l2norm_fwd_loop<true, true, T>(c, p);
      else l2norm_fwd_loop<true, false, T>(c, p);
    } else {
      if (add_norm) l2norm_fwd_loop<false, true, T>(c, p);
      else l2norm_fwd_loop<false, false, T>(c, p);
    })
  return 0;
}

template <bool ADD, typename T>
static void l2norm_bwd_loop(const MXOpCall *c, const L2NormParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  const T *y = static_cast<const T *>(c->inputs[1].dptr);
  const T *norm = static_cast<const T *>(c->inputs[2].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = p.n, inner = p.inner;
  parallel_for_cost(p.outer, n * inner, [&](int64_t b, int64_t e) {
    std::vector<A> dot(inner);
    for (int64_t o = b; o < e; ++o) {
      const int64_t base = o * n * inner;
      for (int64_t i = 0; i < inner; ++i) dot[i] = A(0);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = base + j * inner + i;
          dot[i] += A(g[k]) * A(y[k]);
        }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = base + j * inner + i;
          nn_store<ADD>(dx, k, A((A(g[k]) - A(y[k]) * dot[i]) / A(norm[o * inner + i])));
        }
    }
  });
}

// Inputs (out_grad, out_data, norm), outputs (data_grad).
static int l2norm_backward(MXOpCall *c) {
  const L2NormParam &p = *static_cast<const L2NormParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (l2norm_bwd_loop<ADD, T>(c, p))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_L2NORM_CPU_H_
