// _contrib_AdaptiveAvgPooling2D and its backward (MXNet 1.x's
// src/operator/contrib/adaptive_avg_pooling.cc), on NCHW data.
//
// Output row oh averages input rows [floor(oh * H / OH), ceil((oh + 1) * H /
// OH)) (the quotients in float, as MXNet's), columns likewise; the
// backward adds each output gradient, divided by its window's size, to
// every element of the window.  Planes (batch, channel) are split across
// cores, forward and backward: each plane is one thread's.
#ifndef MX_OPS_ADAPTIVE_POOL_CPU_H_
#define MX_OPS_ADAPTIVE_POOL_CPU_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// The window [*lo, *hi) of output index o of n_out over n_in inputs.
static inline void adaptive_window(int64_t o, int64_t n_out, int64_t n_in, int64_t *lo,
                                   int64_t *hi) {
  *lo = int64_t(std::floor(float(o * n_in) / float(n_out)));
  *hi = int64_t(std::ceil(float((o + 1) * n_in) / float(n_out)));
}

template <bool ADD, typename T>
static void adaptive_avg_forward_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &in = c->inputs[0], &out = c->outputs[0];
  const int64_t H = in.shape[2], W = in.shape[3], OH = out.shape[2], OW = out.shape[3];
  const T *x = static_cast<const T *>(in.dptr);
  T *y = static_cast<T *>(out.dptr);
  parallel_for_cost(out.shape[0] * out.shape[1], H * W + OH * OW, [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      const T *src = x + pl * H * W;
      for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t h0, h1;
        adaptive_window(oh, OH, H, &h0, &h1);
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t w0, w1;
          adaptive_window(ow, OW, W, &w0, &w1);
          A sum = A(0);
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) sum += A(src[h * W + w]);
          nn_store<ADD>(y, (pl * OH + oh) * OW + ow, sum / A(w1 - w0) / A(h1 - h0));
        }
      }
    }
  });
}

// Inputs (data), outputs (output).
static int adaptive_avg_pool_forward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (adaptive_avg_forward_loop<ADD, T>(c))))
  return 0;
}

template <typename T>
static void adaptive_avg_backward_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &og = c->inputs[0], &dx_b = c->outputs[0];
  const int64_t H = dx_b.shape[2], W = dx_b.shape[3], OH = og.shape[2], OW = og.shape[3];
  const T *g = static_cast<const T *>(og.dptr);
  T *dx = static_cast<T *>(dx_b.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(dx_b.shape[0] * dx_b.shape[1], H * W + OH * OW,
                    [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      T *d = dx + pl * H * W;
      if (!add) std::memset(d, 0, size_t(H * W) * sizeof(T));
      for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t h0, h1;
        adaptive_window(oh, OH, H, &h0, &h1);
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t w0, w1;
          adaptive_window(ow, OW, W, &w0, &w1);
          const A v = A(g[(pl * OH + oh) * OW + ow]) / A(h1 - h0) / A(w1 - w0);
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) d[h * W + w] = T(A(d[h * W + w]) + v);
        }
      }
    }
  });
}

// Inputs (out_grad, data: read for its shape), outputs (data_grad).
static int adaptive_avg_pool_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, adaptive_avg_backward_loop<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ADAPTIVE_POOL_CPU_H_
