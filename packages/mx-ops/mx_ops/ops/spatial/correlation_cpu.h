// Correlation (FlowNet's correlation layer) and its backward.  Both inputs
// (N, C, H, W) are zero-padded by pad_size to (pH, pW); output (i, j)
// compares the kernel_size x kernel_size patch of data1 at (y1, x1) =
// (i, j) * stride1 + max_displacement with the patch of data2 displaced by
// (dy, dx) = (channel / G - R, channel % G - R) * stride2 (R =
// max_displacement / stride2, G = 2R + 1), summed over the channels:
// the products (is_multiply) or the absolute differences, over
// kernel_size^2 * C.  The forward works on channels-last copies (contiguous
// channel sums) and splits output rows across workers; the backward works on
// (n, c) planes and splits them, as each plane meets only its own channel.
#ifndef MX_OPS_CORRELATION_CPU_H_
#define MX_OPS_CORRELATION_CPU_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dtype.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.spatial.correlation (after the shape checks there).
struct CorrParam {
  int64_t kernel, max_disp, stride1, stride2, pad, multiply;
  int64_t top_h, top_w, radius, grid_w;           // derived: output rows, columns, R, G
};

// data (N, C, H, W) zero-padded into planes (N*C, pH, pW).
template <typename T>
static std::vector<T> corr_pad(const MXTBlob &d, int64_t pad) {
  const int64_t NC = d.shape[0] * d.shape[1], H = d.shape[2], W = d.shape[3];
  const int64_t pH = H + 2 * pad, pW = W + 2 * pad;
  std::vector<T> out(NC * pH * pW, T(0));
  const T *in = static_cast<const T *>(d.dptr);
  parallel_for_cost(NC * H, W, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      std::copy(in + r * W, in + r * W + W, out.data() + ((r / H) * pH + r % H + pad) * pW + pad);
  });
  return out;
}

// data (N, C, H, W) zero-padded with its channels last: (N, pH, pW, C), the
// hidden output tmp's layout, in which the forward's channel sums are contiguous.
template <typename T>
static std::vector<T> corr_pad_last(const MXTBlob &d, int64_t pad) {
  const int64_t N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
  const int64_t pH = H + 2 * pad, pW = W + 2 * pad;
  std::vector<T> out(N * pH * pW * C, T(0));
  const T *in = static_cast<const T *>(d.dptr);
  parallel_for_cost(N * H, W * C, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {                // r = (n, y): one input row
      const int64_t n = r / H, y = r % H;
      T *o = out.data() + ((n * pH + y + pad) * pW + pad) * C;
      for (int64_t ch = 0; ch < C; ++ch) {
        const T *src = in + ((n * C + ch) * H + y) * W;
        for (int64_t x = 0; x < W; ++x) o[x * C + ch] = src[x];
      }
    }
  });
  return out;
}

// Channel sums over eight running partial sums, which the compiler vectorises
// (one running sum is a chain it may not reorder).
template <typename A, typename T, typename F>
static inline A corr_sum(const T *u, const T *v, int64_t C, F f) {
  A part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t ch = 0;
  for (; ch + 8 <= C; ch += 8)
    for (int l = 0; l < 8; ++l) part[l] += f(A(u[ch + l]), A(v[ch + l]));
  A s = 0;
  for (; ch < C; ++ch) s += f(A(u[ch]), A(v[ch]));
  for (int l = 0; l < 8; ++l) s += part[l];
  return s;
}
template <typename A, typename T>
static inline A corr_dot(const T *u, const T *v, int64_t C) {
  return corr_sum<A>(u, v, C, [](A x, A y) { return x * y; });
}
template <typename A, typename T>
static inline A corr_l1(const T *u, const T *v, int64_t C) {
  return corr_sum<A>(u, v, C, [](A x, A y) { return std::fabs(x - y); });
}

// Inputs (data1, data2); outputs (output (N, G*G, top_h, top_w), tmp1, tmp2).
template <typename T>
static void correlation(MXOpCall *c, const CorrParam &p) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &d = c->inputs[0];
  const int64_t N = d.shape[0], C = d.shape[1];
  const int64_t pH = d.shape[2] + 2 * p.pad, pW = d.shape[3] + 2 * p.pad;
  const std::vector<T> p1 = corr_pad_last<T>(d, p.pad), p2 = corr_pad_last<T>(c->inputs[1], p.pad);
  for (int k = 1; k <= 2; ++k) {
    const std::vector<T> &src = k == 1 ? p1 : p2;
    T *tmp = static_cast<T *>(c->outputs[k].dptr);
    const int32_t req = c->req[k];
    if (req != MX_REQ_NULL)
      parallel_for(int64_t(src.size()), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) nn_put(tmp, i, A(src[i]), req);
      });
  }
  const int32_t req = c->req[0];
  if (req == MX_REQ_NULL) return;
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t K = p.kernel, TC = p.grid_w * p.grid_w, OHW = p.top_h * p.top_w;
  const A norm = A(K * K * C);
  parallel_for_cost(N * p.top_h, p.top_w * TC * K * K * C, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / p.top_h, i = r % p.top_h, y1 = i * p.stride1 + p.max_disp;
      const T *a = p1.data() + n * pH * pW * C, *z = p2.data() + n * pH * pW * C;
      for (int64_t j = 0; j < p.top_w; ++j) {
        const int64_t x1 = j * p.stride1 + p.max_disp;
        for (int64_t tc = 0; tc < TC; ++tc) {
          const int64_t y2 = y1 + (tc / p.grid_w - p.radius) * p.stride2;
          const int64_t x2 = x1 + (tc % p.grid_w - p.radius) * p.stride2;
          A s = 0;
          for (int64_t h = 0; h < K; ++h)
            for (int64_t w = 0; w < K; ++w) {
              const T *u = a + ((y1 + h) * pW + x1 + w) * C, *v = z + ((y2 + h) * pW + x2 + w) * C;
              s += p.multiply ? corr_dot<A>(u, v, C) : corr_l1<A>(u, v, C);
            }
          nn_put(out, (n * TC + tc) * OHW + i * p.top_w + j, s / norm, req);
        }
      }
    }
  });
}

// Inputs (ograd, data1, data2); outputs (data1_grad, data2_grad).
template <typename T>
static void correlation_backward(MXOpCall *c, const CorrParam &p) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &d = c->inputs[1];
  const int64_t N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
  const int64_t pH = H + 2 * p.pad, pW = W + 2 * p.pad, pHW = pH * pW;
  const std::vector<T> p1 = corr_pad<T>(d, p.pad), p2 = corr_pad<T>(c->inputs[2], p.pad);
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  T *g1 = static_cast<T *>(c->outputs[0].dptr), *g2 = static_cast<T *>(c->outputs[1].dptr);
  const int32_t req1 = c->req[0], req2 = c->req[1];
  const int64_t K = p.kernel, TC = p.grid_w * p.grid_w, OHW = p.top_h * p.top_w;
  const A norm = A(K * K * C);
  parallel_for_cost(N * C, OHW * TC * K * K + 2 * pHW, [&](int64_t b, int64_t e) {
    std::vector<A> a1(pHW), a2(pHW);
    for (int64_t r = b; r < e; ++r) {                // r = (n, c): one plane of each input
      const int64_t n = r / C;
      const T *u = p1.data() + r * pHW, *v = p2.data() + r * pHW;
      std::fill(a1.begin(), a1.end(), A(0));
      std::fill(a2.begin(), a2.end(), A(0));
      for (int64_t i = 0; i < p.top_h; ++i)
        for (int64_t j = 0; j < p.top_w; ++j) {
          const int64_t y1 = i * p.stride1 + p.max_disp, x1 = j * p.stride1 + p.max_disp;
          for (int64_t tc = 0; tc < TC; ++tc) {
            const int64_t y2 = y1 + (tc / p.grid_w - p.radius) * p.stride2;
            const int64_t x2 = x1 + (tc % p.grid_w - p.radius) * p.stride2;
            const A g = A(og[(n * TC + tc) * OHW + i * p.top_w + j]) / norm;
            for (int64_t h = 0; h < K; ++h)
              for (int64_t w = 0; w < K; ++w) {
                const int64_t k1 = (y1 + h) * pW + x1 + w, k2 = (y2 + h) * pW + x2 + w;
                if (p.multiply) {
                  a1[k1] += g * A(v[k2]);
                  a2[k2] += g * A(u[k1]);
                } else {
                  const A s = A(u[k1]) >= A(v[k2]) ? g : -g;   // MXNet's sign at a tie: +
                  a1[k1] += s;
                  a2[k2] -= s;
                }
              }
          }
        }
      // The unpadded part of each plane, under its req.
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const int64_t k = (y + p.pad) * pW + x + p.pad, o = (r * H + y) * W + x;
          nn_put(g1, o, a1[k], req1);
          nn_put(g2, o, a2[k], req2);
        }
    }
  });
}

static int correlation_run(MXOpCall *c) {
  const CorrParam &p = *static_cast<const CorrParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, correlation<T>(c, p))
  return 0;
}

static int correlation_backward_run(MXOpCall *c) {
  const CorrParam &p = *static_cast<const CorrParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, correlation_backward<T>(c, p))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_CORRELATION_CPU_H_
