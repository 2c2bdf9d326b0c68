// im2col and col2im (MXNet's src/operator/nn/im2col.h semantics) for 1-, 2-
// and 3-D spatial data, all seen as 3-D (missing leading axes have size 1,
// kernel 1, stride 1, dilation 1, no padding); float16, float32, float64
// (float16 sums in float16, as MXNet's kernel does).
//
// im2col: col[n, (c, kd, kh, kw), (od, oh, ow)] = img[n, c, id, ih, iw] with
// i = o * stride - pad + k * dilate, 0 outside the image.  One column row is
// one (n, c, kd, kh, kw): its (od, oh) lines are a zero fill or a strided
// copy between the two ow where iw leaves the image, so no index is tested
// per element.  col2im is the adjoint: each (n, c) image plane sums the
// rows of its channel into itself, taps in increasing order (the CuPy twin
// adds them in the same order); planes run on separate workers.
#ifndef MX_OPS_IM2COL_CPU_H_
#define MX_OPS_IM2COL_CPU_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.layout.im2col: the batch and channels, then per
// spatial axis (3, leading ones padded) the image size, the number of
// blocks, kernel, stride, dilation and padding.
struct Im2colParam {
  int64_t n, c;
  int64_t in[3], out[3], k[3], s[3], d[3], p[3];
};

// The blocks o in [lo, hi) of the innermost axis whose tap kw reads inside
// the image (iw = o * s - p + kw * d in [0, in)).
static inline void im2col_span(const Im2colParam &g, int64_t kw, int64_t *lo, int64_t *hi) {
  const int64_t s = g.s[2], off = kw * g.d[2] - g.p[2], n = g.in[2];
  // o >= ceil(-off / s) and o <= floor((n - 1 - off) / s)
  const int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t b = n - 1 - off < 0 ? -1 : (n - 1 - off) / s;
  *lo = std::min(a, g.out[2]);
  *hi = std::max(*lo, std::min(b + 1, g.out[2]));
}

template <typename T>
static void im2col_loop(MXOpCall *c, const Im2colParam &g) {
  const T *img = static_cast<const T *>(c->inputs[0].dptr);
  T *col = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t K = g.k[0] * g.k[1] * g.k[2], L = g.out[0] * g.out[1] * g.out[2];
  const int64_t plane = g.in[0] * g.in[1] * g.in[2], ow = g.out[2], sw = g.s[2];
  parallel_for_cost(g.n * g.c * K, L, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t kw = r % g.k[2], kh = r / g.k[2] % g.k[1], kd = r / (g.k[1] * g.k[2]) % g.k[0];
      const T *src = img + r / K * plane;
      int64_t lo, hi;
      im2col_span(g, kw, &lo, &hi);
      const int64_t iw0 = lo * sw - g.p[2] + kw * g.d[2];
      T *o = col + r * L;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
        for (int64_t oh = 0; oh < g.out[1]; ++oh, o += ow) {
          const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
          const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
          if (add) {
            if (!inside) continue;
            const T *s = src + (id * g.in[1] + ih) * g.in[2] + iw0;
            for (int64_t i = lo; i < hi; ++i) o[i] = o[i] + s[(i - lo) * sw];
          } else if (!inside) {
            std::fill(o, o + ow, T(0));
          } else {
            const T *s = src + (id * g.in[1] + ih) * g.in[2] + iw0;
            std::fill(o, o + lo, T(0));
            if (sw == 1) std::memcpy(o + lo, s, (hi - lo) * sizeof(T));
            else for (int64_t i = lo; i < hi; ++i) o[i] = s[(i - lo) * sw];
            std::fill(o + hi, o + ow, T(0));
          }
        }
      }
    }
  });
}

template <typename T>
static void col2im_loop(MXOpCall *c, const Im2colParam &g) {
  const T *col = static_cast<const T *>(c->inputs[0].dptr);
  T *img = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t K = g.k[0] * g.k[1] * g.k[2], L = g.out[0] * g.out[1] * g.out[2];
  const int64_t plane = g.in[0] * g.in[1] * g.in[2], ow = g.out[2], sw = g.s[2];
  parallel_for_cost(g.n * g.c, K * L, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      T *dst = img + nc * plane;
      if (!add) std::fill(dst, dst + plane, T(0));
      for (int64_t k = 0; k < K; ++k) {
        const int64_t kw = k % g.k[2], kh = k / g.k[2] % g.k[1], kd = k / (g.k[1] * g.k[2]);
        int64_t lo, hi;
        im2col_span(g, kw, &lo, &hi);
        const int64_t iw0 = lo * sw - g.p[2] + kw * g.d[2];
        const T *o = col + (nc * K + k) * L;
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
          for (int64_t oh = 0; oh < g.out[1]; ++oh, o += ow) {
            const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) continue;
            T *s = dst + (id * g.in[1] + ih) * g.in[2] + iw0;
            for (int64_t i = lo; i < hi; ++i) s[(i - lo) * sw] += o[i];
          }
        }
      }
    }
  });
}

static int im2col(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const Im2colParam &g = *static_cast<const Im2colParam *>(c->params);
  MX_FLOAT_SWITCH(c->outputs[0].dtype, T, im2col_loop<T>(c, g))
  return 0;
}

// col2im, and im2col's gradient (the same sums; its second input, the
// forward's data, only gave the image shape packed into the block).
static int col2im(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const Im2colParam &g = *static_cast<const Im2colParam *>(c->params);
  MX_FLOAT_SWITCH(c->outputs[0].dtype, T, col2im_loop<T>(c, g))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_IM2COL_CPU_H_
