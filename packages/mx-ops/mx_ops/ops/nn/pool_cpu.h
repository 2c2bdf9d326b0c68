// Pooling (max / avg / sum / lp) over NCW, NCHW and NCDHW, forward and
// backward.
//
// 1-D and 2-D pooling are 3-D pooling with D = 1 (and H = 1: kernel,
// stride 1, no pad on those axes), so one loop serves all three.  The
// windows are MXNet's (src/operator/nn/pool.h): output (od, oh, ow) covers
// [o*s - pad, + kernel) per axis clipped to the padded extent X + pad, and
// then to the data; max, sum and lp use the clipped window; avg divides by
// the window clipped to the padded extent (count_include_pad, MXNet's
// default) or by the valid part only; lp is (sum x^p)^(1/p) for p_value
// 1, 2 or 3 (no absolute value, as MXNet's a_pow_p).  Planes (n, c) are
// split across cores; each is owned by one thread, so the backward scatter
// into a plane needs no atomics.
// Backward takes (out_grad, in_data, out_data), MXNet's convention: max
// routes each output's gradient to the first window position whose input
// equals the output (as MXNet's unpool_max does); lp gives each input
// out_grad * (x / y)^(p - 1), as MXNet's lp_grad.
#ifndef MX_OPS_POOL_CPU_H_
#define MX_OPS_POOL_CPU_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

enum { kPoolMax = 0, kPoolAvg = 1, kPoolSum = 2, kPoolLp = 3 };

// Packed by mx_ops.ops.nn.pooling: geometry with global_pool and the
// convention already applied, axes (d, h, w).
struct PoolParam {
  int32_t type, count_include_pad, p_value, unused;
  int64_t planes, D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw;
};

// The window of output (od, oh, ow): clipped bounds and the avg divisor.
struct PoolWin { int64_t d0, d1, h0, h1, w0, w1, size; };

// One axis of pool_window: [o*s - pad, + k) clipped to the padded extent
// (its length returned), then to [0, x).
static inline int64_t pool_axis(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t x,
                                int64_t *lo, int64_t *hi) {
  int64_t a = o * s - pad, b = a + k < x + pad ? a + k : x + pad;
  const int64_t padded = b - a;
  *lo = a < 0 ? 0 : a;
  *hi = b > x ? x : b;
  return padded;
}

static inline PoolWin pool_window(const PoolParam &p, int64_t od, int64_t oh, int64_t ow) {
  PoolWin w;
  w.size = pool_axis(od, p.sd, p.pd, p.kd, p.D, &w.d0, &w.d1) *
           pool_axis(oh, p.sh, p.ph, p.kh, p.H, &w.h0, &w.h1) *
           pool_axis(ow, p.sw, p.pw, p.kw, p.W, &w.w0, &w.w1);
  if (!p.count_include_pad) w.size = (w.d1 - w.d0) * (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

// x^p and its root for lp pooling, p_value 1, 2 or 3 (MXNet's a_pow_p and
// a_root_p).
template <typename A>
static inline A lp_pow(A x, int p) { return p == 1 ? x : p == 2 ? x * x : x * x * x; }
template <typename A>
static inline A lp_root(A v, int p) {
  return p == 1 ? v : p == 2 ? A(std::sqrt(v)) : A(std::cbrt(v));
}
// d y / d x of lp for input x and output y (MXNet's lp_grad).
template <typename A>
static inline A lp_grad(A g, A x, A y, int p) {
  return p == 1 ? g : p == 2 ? A(g * x / y) : A(g * x * x / (y * y));
}

// Calls f(i) for the in-plane index of every position of window w.
template <typename F>
static inline void for_window(const PoolParam &p, const PoolWin &w, F f) {
  for (int64_t d = w.d0; d < w.d1; ++d)
    for (int64_t h = w.h0; h < w.h1; ++h)
      for (int64_t k = w.w0; k < w.w1; ++k) f((d * p.H + h) * p.W + k);
}

// Max pooling 2x2 stride 2 with no padding whose windows tile the input
// exactly (LeNet's, and most CNNs'): each input belongs to one window, so
// both directions run per output row, four positions per output, without
// the general loops' per-output window clipping, and backward writes dx
// directly, without their zeroed plane buffer and early-exit search
// (backward 2.5 ms -> 0.4 ms on (64,20,24,24), one thread).
// (3-D pooling with a (1, 2, 2) kernel too: its depth slices are planes).
static inline bool pool_max_2x2_tiles(const PoolParam &p) {
  return p.type == kPoolMax && p.kd == 1 && p.sd == 1 && p.pd == 0 && p.kh == 2 &&
         p.kw == 2 && p.sh == 2 && p.sw == 2 && p.ph == 0 && p.pw == 0 && p.H == 2 * p.OH &&
         p.W == 2 * p.OW;
}

// The general loop's max, step for step (a nan input is never taken).
template <typename A>
static inline A max_step(A v, A x) { return x > v ? x : v; }

template <bool ADD, typename T>
static void pool_max_2x2_fwd(const MXOpCall *c, const PoolParam &p) {
  typedef typename NnAcc<T>::type A;
  const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
  parallel_for_cost(p.planes * p.D * p.OH, p.OW * 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {             // r: one output row of one slice
      const int64_t pl = r / p.OH, oh = r % p.OH;
      const T *x0 = static_cast<const T *>(c->inputs[0].dptr) + pl * in_plane + 2 * oh * p.W;
      const T *x1 = x0 + p.W;
      T *y = static_cast<T *>(c->outputs[0].dptr) + pl * out_plane + oh * p.OW;
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        A v = max_step(std::numeric_limits<A>::lowest(), A(x0[2 * ow]));
        v = max_step(v, A(x0[2 * ow + 1]));
        v = max_step(v, A(x1[2 * ow]));
        nn_store<ADD>(y, ow, max_step(v, A(x1[2 * ow + 1])));
      }
    }
  });
}

template <bool ADD, typename T>
static void pool_fwd_loop(const MXOpCall *c, const PoolParam &p) {
  typedef typename NnAcc<T>::type A;
  if (pool_max_2x2_tiles(p)) return pool_max_2x2_fwd<ADD, T>(c, p);
  const int64_t in_plane = p.D * p.H * p.W, out_plane = p.OD * p.OH * p.OW;
  parallel_for_cost(p.planes, out_plane * p.kd * p.kh * p.kw, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T *x = static_cast<const T *>(c->inputs[0].dptr) + pl * in_plane;
      T *y = static_cast<T *>(c->outputs[0].dptr) + pl * out_plane;
      int64_t o = 0;
      for (int64_t od = 0; od < p.OD; ++od)
        for (int64_t oh = 0; oh < p.OH; ++oh)
          for (int64_t ow = 0; ow < p.OW; ++ow, ++o) {
            const PoolWin w = pool_window(p, od, oh, ow);
            A v;
            if (p.type == kPoolMax) {
              v = std::numeric_limits<A>::lowest();
              for_window(p, w, [&](int64_t i) { if (A(x[i]) > v) v = A(x[i]); });
            } else if (p.type == kPoolLp) {
              v = A(0);
              for_window(p, w, [&](int64_t i) { v += lp_pow(A(x[i]), p.p_value); });
              v = lp_root(v, p.p_value);
            } else {
              v = A(0);
              for_window(p, w, [&](int64_t i) { v += A(x[i]); });
              if (p.type == kPoolAvg)
                v = w.size == 0 ? std::numeric_limits<A>::quiet_NaN() : A(v / A(w.size));
            }
            nn_store<ADD>(y, o, v);
          }
    }
  });
}

template <bool ADD, typename T>
static void pool_max_2x2_bwd(const MXOpCall *c, const PoolParam &p) {
  typedef typename NnAcc<T>::type A;
  const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
  parallel_for_cost(p.planes * p.D * p.OH, p.OW * 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {             // r: one output row of one slice
      const int64_t pl = r / p.OH, oh = r % p.OH;
      const T *og = static_cast<const T *>(c->inputs[0].dptr) + pl * out_plane + oh * p.OW;
      const T *y = static_cast<const T *>(c->inputs[2].dptr) + pl * out_plane + oh * p.OW;
      const int64_t top = pl * in_plane + 2 * oh * p.W;
      const T *x0 = static_cast<const T *>(c->inputs[1].dptr) + top, *x1 = x0 + p.W;
      T *d0 = static_cast<T *>(c->outputs[0].dptr) + top, *d1 = d0 + p.W;
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        // The first position (row-major) equal to the output takes the
        // gradient, as in the general loop; bitwise & keeps it branch-free.
        const A v = A(y[ow]), g = A(og[ow]);
        const int e0 = A(x0[2 * ow]) == v, e1 = A(x0[2 * ow + 1]) == v;
        const int e2 = A(x1[2 * ow]) == v, e3 = A(x1[2 * ow + 1]) == v;
        const int m1 = e1 & !e0, m2 = e2 & !(e0 | e1), m3 = e3 & !(e0 | e1 | e2);
        nn_store<ADD>(d0, 2 * ow, e0 ? g : A(0));
        nn_store<ADD>(d0, 2 * ow + 1, m1 ? g : A(0));
        nn_store<ADD>(d1, 2 * ow, m2 ? g : A(0));
        nn_store<ADD>(d1, 2 * ow + 1, m3 ? g : A(0));
      }
    }
  });
}

template <bool ADD, typename T>
static void pool_bwd_loop(const MXOpCall *c, const PoolParam &p) {
  typedef typename NnAcc<T>::type A;
  if (pool_max_2x2_tiles(p)) return pool_max_2x2_bwd<ADD, T>(c, p);
  const int64_t in_plane = p.D * p.H * p.W, out_plane = p.OD * p.OH * p.OW;
  parallel_for_cost(p.planes, out_plane * p.kd * p.kh * p.kw, [&](int64_t b, int64_t e) {
    std::vector<A> acc(in_plane);     // the plane's gradient, then stored with req
    for (int64_t pl = b; pl < e; ++pl) {
      const T *og = static_cast<const T *>(c->inputs[0].dptr) + pl * out_plane;
      const T *x = static_cast<const T *>(c->inputs[1].dptr) + pl * in_plane;
      const T *y = static_cast<const T *>(c->inputs[2].dptr) + pl * out_plane;
      T *dx = static_cast<T *>(c->outputs[0].dptr) + pl * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) acc[i] = A(0);
      int64_t o = 0;
      for (int64_t od = 0; od < p.OD; ++od)
        for (int64_t oh = 0; oh < p.OH; ++oh)
          for (int64_t ow = 0; ow < p.OW; ++ow, ++o) {
            const PoolWin w = pool_window(p, od, oh, ow);
            const A g = A(og[o]);
            if (p.type == kPoolMax) {
              int64_t first = -1;           // the first position equal to the output
              for_window(p, w, [&](int64_t i) {
                if (first < 0 && x[i] == y[o]) first = i;
              });
              if (first >= 0) acc[first] += g;
            } else if (p.type == kPoolLp) {
              const A yo = A(y[o]);
              for_window(p, w, [&](int64_t i) { acc[i] += lp_grad(g, A(x[i]), yo, p.p_value); });
            } else {
              const A share = p.type == kPoolAvg ? A(g / A(w.size)) : g;
              for_window(p, w, [&](int64_t i) { acc[i] += share; });
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
