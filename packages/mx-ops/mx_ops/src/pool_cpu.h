// Pooling (max / avg / sum) over NCW and NCHW, forward and backward.
//
// 1-D pooling is 2-D pooling with H = 1 (kernel, stride 1, no pad on H), so
// one loop serves both.  The windows are MXNet's (src/operator/nn/pool.h):
// output (oh, ow) covers rows [oh*sh - ph, +kh) clipped to the padded extent
// H + ph, and then to the data; max and sum use the clipped window; avg
// divides by the window clipped to the padded extent (count_include_pad,
// MXNet's default) or by the valid part only.  Planes (n, c) are split
// across cores; each is owned by one thread, so the backward scatter into
// a plane needs no atomics.
// Backward takes (out_grad, in_data, out_data), MXNet's convention: max
// routes each output's gradient to the first window position whose input
// equals the output (as MXNet's unpool_max does).
#ifndef MX_OPS_POOL_CPU_H_
#define MX_OPS_POOL_CPU_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

enum { kPoolMax = 0, kPoolAvg = 1, kPoolSum = 2 };

// Packed by mx_ops.pooling: geometry with global_pool and the convention
// already applied.
struct PoolParam {
  int32_t type, count_include_pad;
  int64_t planes, H, W, OH, OW, kh, kw, sh, sw, ph, pw;
};

// The window of output (oh, ow): clipped bounds and the avg divisor.
struct PoolWin { int64_t h0, h1, w0, w1, size; };

static inline PoolWin pool_window(const PoolParam &p, int64_t oh, int64_t ow) {
  PoolWin w;
  w.h0 = oh * p.sh - p.ph;
  w.w0 = ow * p.sw - p.pw;
  w.h1 = w.h0 + p.kh < p.H + p.ph ? w.h0 + p.kh : p.H + p.ph;
  w.w1 = w.w0 + p.kw < p.W + p.pw ? w.w0 + p.kw : p.W + p.pw;
  w.size = (w.h1 - w.h0) * (w.w1 - w.w0);
  if (w.h0 < 0) w.h0 = 0;
  if (w.w0 < 0) w.w0 = 0;
  if (w.h1 > p.H) w.h1 = p.H;
  if (w.w1 > p.W) w.w1 = p.W;
  if (!p.count_include_pad) w.size = (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

template <bool ADD, typename T>
static void pool_fwd_loop(const MXOpCall *c, const PoolParam &p) {
  typedef typename NnAcc<T>::type A;
  const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
  parallel_for_cost(p.planes, out_plane * p.kh * p.kw, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T *x = static_cast<const T *>(c->inputs[0].dptr) + pl * in_plane;
      T *y = static_cast<T *>(c->outputs[0].dptr) + pl * out_plane;
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          const PoolWin w = pool_window(p, oh, ow);
          A v;
          if (p.type == kPoolMax) {
            v = std::numeric_limits<A>::lowest();
            for (int64_t h = w.h0; h < w.h1; ++h)
              for (int64_t k = w.w0; k < w.w1; ++k)
                if (A(x[h * p.W + k]) > v) v = A(x[h * p.W + k]);
          } else {
            v = A(0);
            for (int64_t h = w.h0; h < w.h1; ++h)
              for (int64_t k = w.w0; k < w.w1; ++k) v += A(x[h * p.W + k]);
            if (p.type == kPoolAvg)
              v = w.size == 0 ? std::numeric_limits<A>::quiet_NaN() : A(v / A(w.size));
          }
          nn_store<ADD>(y, oh * p.OW + ow, v);
        }
    }
  });
}

template <bool ADD, typename T>
static void pool_bwd_loop(const MXOpCall *c, const PoolParam &p) {
  typedef typename NnAcc<T>::type A;
  const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
  parallel_for_cost(p.planes, out_plane * p.kh * p.kw, [&](int64_t b, int64_t e) {
    std::vector<A> acc(in_plane);     // the plane's gradient, then stored with req
    for (int64_t pl = b; pl < e; ++pl) {
      const T *og = static_cast<const T *>(c->inputs[0].dptr) + pl * out_plane;
      const T *x = static_cast<const T *>(c->inputs[1].dptr) + pl * in_plane;
      const T *y = static_cast<const T *>(c->inputs[2].dptr) + pl * out_plane;
      T *dx = static_cast<T *>(c->outputs[0].dptr) + pl * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) acc[i] = A(0);
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          const PoolWin w = pool_window(p, oh, ow);
          const int64_t o = oh * p.OW + ow;
          const A g = A(og[o]);
          if (p.type == kPoolMax) {
            bool found = false;
            for (int64_t h = w.h0; h < w.h1 && !found; ++h)
              for (int64_t k = w.w0; k < w.w1; ++k)
                if (x[h * p.W + k] == y[o]) { acc[h * p.W + k] += g; found = true; break; }
          } else {
            const A share = p.type == kPoolAvg ? A(g / A(w.size)) : g;
            for (int64_t h = w.h0; h < w.h1; ++h)
              for (int64_t k = w.w0; k < w.w1; ++k) acc[h * p.W + k] += share;
          }
        }
      for (int64_t i = 0; i < in_plane; ++i) nn_store<ADD>(dx, i, acc[i]);
    }
  });
}

// Inputs (data), output (output).
static int pool_forward(MXOpCall *c) {
  const PoolParam &p = *static_cast<const PoolParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (pool_fwd_loop<ADD, T>(c, p))))
  return 0;
}

// Inputs (out_grad, in_data, out_data), output (data_grad).
static int pool_backward(MXOpCall *c) {
  const PoolParam &p = *static_cast<const PoolParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (pool_bwd_loop<ADD, T>(c, p))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_POOL_CPU_H_
