// GridGenerator, BilinearSampler and SpatialTransformer (the two in one)
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
#include <vector>

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

// The target grid (MXNet's grid_dst) under req: 'affine' (3, H*W) rows x, y
// and 1; 'warp' (2, H, W) the pixel positions (w, h).
template <typename T>
static void grid_dst(T *dst, int64_t H, int64_t W, bool warp, int32_t req) {
  typedef typename NnAcc<T>::type A;
  if (req == MX_REQ_NULL) return;
  const int64_t HW = H * W;
  parallel_for_cost(HW, 3, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      nn_put(dst, i, warp ? A(i % W) : grid_coord<A>(i % W, W), req);
      nn_put(dst, HW + i, warp ? A(i / W) : grid_coord<A>(i / W, H), req);
      if (!warp) nn_put(dst, 2 * HW + i, A(1), req);
    }
  });
}

// 'affine': theta (N, 6) is (N, 2, 3); out[n, k, h, w] = theta[n, k] . (x_w, y_h, 1).
template <typename T>
static void affine_grid(const T *theta, T *out, int64_t N, int64_t H, int64_t W, int32_t req) {
  typedef typename NnAcc<T>::type A;
  if (req == MX_REQ_NULL) return;
  const int64_t HW = H * W;
  parallel_for_cost(N * HW, 6, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t n = j / HW, i = j % HW;
      const T *t = theta + n * 6;
      const A x = grid_coord<A>(i % W, W), y = grid_coord<A>(i / W, H);
      nn_put(out, n * 2 * HW + i, A(t[0]) * x + A(t[1]) * y + A(t[2]), req);
      nn_put(out, n * 2 * HW + HW + i, A(t[3]) * x + A(t[4]) * y + A(t[5]), req);
    }
  });
}

// 'warp': flow (N, 2, H, W) in pixels; out = (flow + (w, h)) / ((W-1)/2, (H-1)/2) - 1.
template <typename T>
static void warp_grid(const T *flow, T *out, int64_t N, int64_t H, int64_t W, int32_t req) {
  typedef typename NnAcc<T>::type A;
  if (req == MX_REQ_NULL) return;
  const int64_t HW = H * W;
  const A nx = (A(W) - A(1)) / A(2), ny = (A(H) - A(1)) / A(2);
  parallel_for_cost(N * 2 * HW, 2, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t i = j % HW;
      const bool y = (j / HW) % 2;
      nn_put(out, j, (A(flow[j]) + A(y ? i / W : i % W)) / (y ? ny : nx) - A(1), req);
    }
  });
}

// affine_grid's adjoint: g[n, k, j] = sum over (h, w) of ograd[n, k, h, w] *
// (x_w, y_h, 1)[j], one (n, k) row of theta per item.
template <typename T>
static void affine_grid_backward(const T *g, T *out, int64_t N, int64_t H, int64_t W,
                                 int32_t req) {
  typedef typename NnAcc<T>::type A;
  if (req == MX_REQ_NULL) return;
  const int64_t HW = H * W;
  parallel_for_cost(N * 2, 3 * HW, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
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

// warp_grid's adjoint: ograd / ((W-1)/2, (H-1)/2) per channel.
template <typename T>
static void warp_grid_backward(const T *g, T *out, int64_t N, int64_t H, int64_t W,
                               int32_t req) {
  typedef typename NnAcc<T>::type A;
  if (req == MX_REQ_NULL) return;
  const int64_t HW = H * W;
  const A nx = (A(W) - A(1)) / A(2), ny = (A(H) - A(1)) / A(2);
  parallel_for(N * 2 * HW, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) nn_put(out, i, A(g[i]) / ((i / HW) % 2 ? ny : nx), req);
  });
}

// --- bilinear sampling ---------------------------------------------------------------------

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

// The shapes of one sampling: data (N, C, H, W), grid (N, 2, P points).
struct SampleDims { int64_t N, C, H, W, P; };

// out[n, c, i] = the bilinear interpolation of data[n, c] at grid[n, :, i].
template <typename T>
static void sample(const T *data, const T *grid, T *out, const SampleDims &s, int32_t req) {
  typedef typename NnAcc<T>::type A;
  if (req == MX_REQ_NULL) return;
  const int64_t C = s.C, H = s.H, W = s.W, P = s.P;
  parallel_for_cost(s.N * P, 4 * C, [&](int64_t b, int64_t e) {
    A v[4];
    for (int64_t j = b; j < e; ++j) {
      const int64_t n = j / P, i = j % P;
      const T *g = grid + n * 2 * P + i;
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

// sample's gradients from ograd (N, C, P): of data (dreq) and of grid (greq).
template <typename T>
static void sample_backward(const T *g, const T *data, const T *grid, T *gdata, T *ggrid,
                            const SampleDims &s, int32_t dreq, int32_t greq) {
  typedef typename NnAcc<T>::type A;
  const int64_t C = s.C, H = s.H, W = s.W, P = s.P;
  if (dreq != MX_REQ_NULL) {
    // Each (n, c) plane scatters into its own plane of gdata: no two workers meet.
    parallel_for_cost(s.N * C, 4 * P + H * W, [&](int64_t b, int64_t e) {
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
  parallel_for_cost(s.N * P, 4 * C, [&](int64_t b, int64_t e) {
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

static inline SampleDims sample_dims(const MXTBlob &data, const MXTBlob &grid) {
  return {data.shape[0], data.shape[1], data.shape[2], data.shape[3],
          grid.shape[2] * grid.shape[3]};
}

// --- the operators ---------------------------------------------------------------------------

// GridGenerator: inputs (data); outputs (output (N, 2, H, W), grid_dst).
template <typename T>
static void grid_generator(MXOpCall *c) {
  const bool warp = static_cast<const GridParam *>(c->params)->warp != 0;
  const MXTBlob &o = c->outputs[0];
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(o.dptr);
  const int64_t N = o.shape[0], H = o.shape[2], W = o.shape[3];
  grid_dst(static_cast<T *>(c->outputs[1].dptr), H, W, warp, c->req[1]);
  (warp ? warp_grid<T> : affine_grid<T>)(in, out, N, H, W, c->req[0]);
}

// _backward_GridGenerator: inputs (ograd); outputs (data_grad).
template <typename T>
static void grid_generator_backward(MXOpCall *c) {
  const bool warp = static_cast<const GridParam *>(c->params)->warp != 0;
  const MXTBlob &og = c->inputs[0];
  (warp ? warp_grid_backward<T> : affine_grid_backward<T>)(
      static_cast<const T *>(og.dptr), static_cast<T *>(c->outputs[0].dptr), og.shape[0],
      og.shape[2], og.shape[3], c->req[0]);
}

// BilinearSampler: inputs (data, grid); outputs (output, tmp): tmp (N, Ho, Wo, 2)
// holds the grid point by point (cuDNN's layout).
template <typename T>
static void bilinear_sampler(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const SampleDims s = sample_dims(c->inputs[0], c->inputs[1]);
  const T *grid = static_cast<const T *>(c->inputs[1].dptr);
  T *tmp = static_cast<T *>(c->outputs[1].dptr);
  const int32_t treq = c->req[1];
  if (treq != MX_REQ_NULL)
    parallel_for_cost(s.N * s.P, 2, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        const T *g = grid + (j / s.P) * 2 * s.P + j % s.P;
        nn_put(tmp, 2 * j, A(g[0]), treq);
        nn_put(tmp, 2 * j + 1, A(g[s.P]), treq);
      }
    });
  sample(static_cast<const T *>(c->inputs[0].dptr), grid, static_cast<T *>(c->outputs[0].dptr),
         s, c->req[0]);
}

// _backward_BilinearSampler: inputs (ograd, data, grid); outputs (data_grad, grid_grad).
template <typename T>
static void bilinear_sampler_backward(MXOpCall *c) {
  sample_backward(static_cast<const T *>(c->inputs[0].dptr),
                  static_cast<const T *>(c->inputs[1].dptr),
                  static_cast<const T *>(c->inputs[2].dptr),
                  static_cast<T *>(c->outputs[0].dptr), static_cast<T *>(c->outputs[1].dptr),
                  sample_dims(c->inputs[1], c->inputs[2]), c->req[0], c->req[1]);
}

// SpatialTransformer: inputs (data, loc (N, 6)); outputs (output (N, C, Ho, Wo),
// grid_dst (3, Ho*Wo), grid_src (N, 2, Ho, Wo)): the affine grid of loc, then
// the sampling at it.  The grid is built in a buffer, so that grid_src's req
// ('add', 'null') does not change what is sampled.
template <typename T>
static void spatial_transformer(MXOpCall *c) {
  const MXTBlob &gs = c->outputs[2];
  const SampleDims s = sample_dims(c->inputs[0], gs);
  const int64_t Ho = gs.shape[2], Wo = gs.shape[3];
  std::vector<T> grid(s.N * 2 * s.P);
  affine_grid(static_cast<const T *>(c->inputs[1].dptr), grid.data(), s.N, Ho, Wo,
              MX_REQ_WRITE);
  T *src = static_cast<T *>(gs.dptr);
  for (int64_t i = 0; i < int64_t(grid.size()); ++i) nn_put(src, i, grid[i], c->req[2]);
  grid_dst(static_cast<T *>(c->outputs[1].dptr), Ho, Wo, false, c->req[1]);
  sample(static_cast<const T *>(c->inputs[0].dptr), grid.data(),
         static_cast<T *>(c->outputs[0].dptr), s, c->req[0]);
}

// _backward_SpatialTransformer: inputs (ograd, data, loc); outputs (data_grad,
// loc_grad): the sampler's gradients at the rebuilt grid, the grid's through
// affine_grid's adjoint.
template <typename T>
static void spatial_transformer_backward(MXOpCall *c) {
  const MXTBlob &og = c->inputs[0];
  const SampleDims s = sample_dims(c->inputs[1], og);
  const int64_t Ho = og.shape[2], Wo = og.shape[3];
  const T *loc = static_cast<const T *>(c->inputs[2].dptr);
  std::vector<T> grid(s.N * 2 * s.P), ggrid(c->req[1] == MX_REQ_NULL ? 0 : s.N * 2 * s.P);
  affine_grid(loc, grid.data(), s.N, Ho, Wo, MX_REQ_WRITE);
  sample_backward(static_cast<const T *>(og.dptr), static_cast<const T *>(c->inputs[1].dptr),
                  grid.data(), static_cast<T *>(c->outputs[0].dptr), ggrid.data(), s,
                  c->req[0], c->req[1] == MX_REQ_NULL ? MX_REQ_NULL : MX_REQ_WRITE);
  affine_grid_backward(ggrid.data(), static_cast<T *>(c->outputs[1].dptr), s.N, Ho, Wo,
                       c->req[1]);
}

// --- entry points: the float dtypes -----------------------------------------------------

#define MX_SPATIAL_KERNEL(NAME, IMPL)                                                \
  static int NAME(MXOpCall *c) {                                                    \
    MX_FLOAT_SWITCH(c->inputs[0].dtype, T, IMPL<T>(c))                              \
    return 0;                                                                       \
  }
MX_SPATIAL_KERNEL(grid_generator_run, grid_generator)
MX_SPATIAL_KERNEL(grid_generator_backward_run, grid_generator_backward)
MX_SPATIAL_KERNEL(bilinear_sampler_run, bilinear_sampler)
MX_SPATIAL_KERNEL(bilinear_sampler_backward_run, bilinear_sampler_backward)
MX_SPATIAL_KERNEL(spatial_transformer_run, spatial_transformer)
MX_SPATIAL_KERNEL(spatial_transformer_backward_run, spatial_transformer_backward)
#undef MX_SPATIAL_KERNEL

}  // namespace mxop
#endif  // MX_OPS_SPATIAL_CPU_H_
