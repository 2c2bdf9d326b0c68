// GridGenerator and BilinearSampler (MXNet's spatial-transformer pieces)
// with their backwards.  Grids hold normalised coordinates in [-1, 1]:
// channel 0 is x (across the width), channel 1 is y (down the height);
// x = -1 maps to column 0, x = 1 to column W-1.  Every loop is split
// across workers over independent outputs, so no two workers write one
// element (the sampler's data gradient is split by (n, c) plane).
#ifndef MX_OPS_SPATIAL_CPU_H_
#define MX_OPS_SPATIAL_CPU_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dtype.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.spatial.grid_generator: 1 for transform_type
// 'warp', 0 for 'affine'.
struct GridParam { int64_t warp; };

// --- GridGenerator -----------------------------------------------------------------------

// The target grid's coordinates: x of column w, y of row h (MXNet's grid_dst,
// -1 + i * 2 / (n - 1): nan for a single row or column, as in MXNet).
template <typename A>
static inline A grid_coord(int64_t i, int64_t n) {
  return A(-1) + A(i) * A(2.0 / double(n - 1));
}

// affine: data (N, 6) is theta (N, 2, 3); out[n, k, h, w] = theta[n, k] . (x_w, y_h, 1);
// grid_dst (3, H*W) holds the rows x, y and 1.  warp: data is a flow (N, 2, H, W)
// in pixels; out = (flow + (w, h)) / ((W-1)/2, (H-1)/2) - 1; grid_dst (2, H, W)
// holds (w, h).
template <typename T>
static void grid_generator(MXOpCall *c, bool warp) {
  typedef typename NnAcc<T>::type A;
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  const MXTBlob &o = c->outputs[0];
  T *out = static_cast<T *>(o.dptr), *dst = static_cast<T *>(c->outputs[1].dptr);
  const int64_t N = o.shape[0], H = o.shape[2], W = o.shape[3], HW = H * W;
  const int32_t req = c->req[0], dreq = c->req[1];
  parallel_for_cost(HW, 3, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (warp) {
        nn_put(dst, i, A(i % W), dreq);
        nn_put(dst, HW + i, A(i / W), dreq);
      } else {
        nn_put(dst, i, grid_coord<A>(i % W, W), dreq);
        nn_put(dst, HW + i, grid_coord<A>(i / W, H), dreq);
        nn_put(dst, 2 * HW + i, A(1), dreq);
      }
    }
  });
  if (req == MX_REQ_NULL) return;
  const A nx = (A(W) - A(1)) / A(2), ny = (A(H) - A(1)) / A(2);
  parallel_for_cost(N * HW, 6, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t n = j / HW, i = j % HW, w = i % W, h = i / W;
      const int64_t o0 = n * 2 * HW + i, o1 = o0 + HW;
      if (warp) {
        nn_put(out, o0, (A(in[o0]) + A(w)) / nx - A(1), req);
        nn_put(out, o1, (A(in[o1]) + A(h)) / ny - A(1), req);
      } else {
        const T *t = in + n * 6;
        const A x = grid_coord<A>(w, W), y = grid_coord<A>(h, H);
        nn_put(out, o0, A(t[0]) * x + A(t[1]) * y + A(t[2]), req);
        nn_put(out, o1, A(t[3]) * x + A(t[4]) * y + A(t[5]), req);
      }
    }
  });
}

// The gradient of 'data' from the output's, inputs (ograd): affine
// g[n, k, j] = sum over (h, w) of ograd[n, k, h, w] * (x_w, y_h, 1)[j];
// warp g[n, 0] = ograd[n, 0] / ((W-1)/2), g[n, 1] = ograd[n, 1] / ((H-1)/2).
template <typename T>
static void grid_generator_backward(MXOpCall *c, bool warp) {
  typedef typename NnAcc<T>::type A;
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const MXTBlob &og = c->inputs[0];
  const int64_t N = og.shape[0], H = og.shape[2], W = og.shape[3], HW = H * W;
  const int32_t req = c->req[0];
  if (warp) {
    const A nx = (A(W) - A(1)) / A(2), ny = (A(H) - A(1)) / A(2);
    parallel_for(N * 2 * HW, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) nn_put(out, i, A(g[i]) / ((i / HW) % 2 ? ny : nx), req);
    });
    return;
  }
  parallel_for_cost(N * 2, 3 * HW, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {            // r = (n, k): one row of theta
      const T *gr = g + r * HW;
      double sx = 0, sy = 0, s1 = 0;
      for (int64_t i = 0; i < HW; ++i) {
        const double v = double(A(gr[i]));
        sx += v * double(grid_coord<A>(i % W, W));
        sy += v * double(grid_coord<A>(i / W, H));
        s1 += v;
      }
      nn_put(out, r * 3, A(sx), req);
      nn_put(out, r * 3 + 1, A(sy), req);
      nn_put(out, r * 3 + 2, A(s1), req);
    }
  });
}

// --- BilinearSampler ---------------------------------------------------------------------

// The four neighbours of one sampling point of an (H, W) plane: the top-left
// pixel (x0, y0), its weights wx = 1 - frac(x), wy = 1 - frac(y), and which of
// the four taps lie inside (a tap outside reads zero).
template <typename A>
struct Tap {
  int64_t x0, y0;
  A wx, wy;
  bool in00, in01, in10, in11;                   // in<dy><dx>

  Tap(A gx, A gy, int64_t H, int64_t W) {
    const A x = (gx + A(1)) * A(W - 1) / A(2), y = (gy + A(1)) * A(H - 1) / A(2);
    const A fx = std::floor(x), fy = std::floor(y);
    x0 = int64_t(fx);
    y0 = int64_t(fy);
    wx = A(1) - (x - fx);
    wy = A(1) - (y - fy);
    const bool x0in = x0 >= 0 && x0 <= W - 1, x1in = x0 + 1 >= 0 && x0 + 1 <= W - 1;
    const bool y0in = y0 >= 0 && y0 <= H - 1, y1in = y0 + 1 >= 0 && y0 + 1 <= H - 1;
    in00 = y0in && x0in;
    in01 = y0in && x1in;
    in10 = y1in && x0in;
    in11 = y1in && x1in;
  }
  // The four tap values of plane p (zero outside).
  template <typename T>
  void read(const T *p, int64_t W, A v[4]) const {
    const int64_t at = y0 * W + x0;
    v[0] = in00 ? A(p[at]) : A(0);
    v[1] = in01 ? A(p[at + 1]) : A(0);
    v[2] = in10 ? A(p[at + W]) : A(0);
    v[3] = in11 ? A(p[at + W + 1]) : A(0);
  }
};

// out[n, c, i] = the bilinear interpolation of data[n, c] at grid[n, :, i];
// tmp (N, Ho, Wo, 2) holds the grid point by point (cuDNN's layout).
template <typename T>
static void bilinear_sampler(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &d = c->inputs[0], &o = c->outputs[0];
  const T *data = static_cast<const T *>(d.dptr);
  const T *grid = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(o.dptr), *tmp = static_cast<T *>(c->outputs[1].dptr);
  const int64_t N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
  const int64_t P = o.shape[2] * o.shape[3];
  const int32_t req = c->req[0], treq = c->req[1];
  parallel_for_cost(N * P, 4 * C + 2, [&](int64_t b, int64_t e) {
    A v[4];
    for (int64_t j = b; j < e; ++j) {
      const int64_t n = j / P, i = j % P;
      const T *g = grid + n * 2 * P + i;
      nn_put(tmp, 2 * j, A(g[0]), treq);
      nn_put(tmp, 2 * j + 1, A(g[P]), treq);
      if (req == MX_REQ_NULL) continue;
      const Tap<A> t{A(g[0]), A(g[P]), H, W};
      for (int64_t ch = 0; ch < C; ++ch) {
        t.read(data + (n * C + ch) * H * W, W, v);
        nn_put(out, (n * C + ch) * P + i,
               t.wy * (t.wx * v[0] + (A(1) - t.wx) * v[1]) +
                   (A(1) - t.wy) * (t.wx * v[2] + (A(1) - t.wx) * v[3]), req);
      }
    }
  });
}

// Inputs (ograd, data, grid); outputs the gradients of data and grid.
template <typename T>
static void bilinear_sampler_backward(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &d = c->inputs[1], &og = c->inputs[0];
  const T *g = static_cast<const T *>(og.dptr), *data = static_cast<const T *>(d.dptr);
  const T *grid = static_cast<const T *>(c->inputs[2].dptr);
  T *gdata = static_cast<T *>(c->outputs[0].dptr), *ggrid = static_cast<T *>(c->outputs[1].dptr);
  const int64_t N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
  const int64_t P = og.shape[2] * og.shape[3];
  const int32_t dreq = c->req[0], greq = c->req[1];
  if (dreq != MX_REQ_NULL) {
    // Each (n, c) plane scatters into its own plane of gdata: no two workers meet.
    parallel_for_cost(N * C, 4 * P + H * W, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        T *gd = gdata + r * H * W;
        if (dreq != MX_REQ_ADD) std::fill(gd, gd + H * W, T(0));
        const T *gr = g + r * P, *gp = grid + (r / C) * 2 * P;
        for (int64_t i = 0; i < P; ++i) {
          const Tap<A> t{A(gp[i]), A(gp[P + i]), H, W};
          const A v = A(gr[i]);
          const int64_t k = t.y0 * W + t.x0;
          if (t.in00) gd[k] = T(A(gd[k]) + v * t.wy * t.wx);
          if (t.in01) gd[k + 1] = T(A(gd[k + 1]) + v * t.wy * (A(1) - t.wx));
          if (t.in10) gd[k + W] = T(A(gd[k + W]) + v * (A(1) - t.wy) * t.wx);
          if (t.in11) gd[k + W + 1] = T(A(gd[k + W + 1]) + v * (A(1) - t.wy) * (A(1) - t.wx));
        }
      }
    });
  }
  if (greq == MX_REQ_NULL) return;
  // d out / d x = wy (v01 - v00) + (1 - wy) (v11 - v10), times dx/dgx = (W-1)/2; y alike.
  parallel_for_cost(N * P, 4 * C, [&](int64_t b, int64_t e) {
    A v[4];
    for (int64_t j = b; j < e; ++j) {
      const int64_t n = j / P, i = j % P;
      const T *gp = grid + n * 2 * P + i;
      const Tap<A> t{A(gp[0]), A(gp[P]), H, W};
      A sx = 0, sy = 0;
      for (int64_t ch = 0; ch < C; ++ch) {
        t.read(data + (n * C + ch) * H * W, W, v);
        const A o = A(g[(n * C + ch) * P + i]);
        sx += o * (t.wy * (v[1] - v[0]) + (A(1) - t.wy) * (v[3] - v[2]));
        sy += o * (t.wx * (v[2] - v[0]) + (A(1) - t.wx) * (v[3] - v[1]));
      }
      nn_put(ggrid, n * 2 * P + i, sx * A(W - 1) / A(2), greq);
      nn_put(ggrid, n * 2 * P + P + i, sy * A(H - 1) / A(2), greq);
    }
  });
}

// --- entry points --------------------------------------------------------------------------

static int grid_generator_run(MXOpCall *c) {
  const bool warp = static_cast<const GridParam *>(c->params)->warp != 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, grid_generator<T>(c, warp))
  return 0;
}

static int grid_generator_backward_run(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const bool warp = static_cast<const GridParam *>(c->params)->warp != 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, grid_generator_backward<T>(c, warp))
  return 0;
}

static int bilinear_sampler_run(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, bilinear_sampler<T>(c))
  return 0;
}

static int bilinear_sampler_backward_run(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, bilinear_sampler_backward<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SPATIAL_CPU_H_
