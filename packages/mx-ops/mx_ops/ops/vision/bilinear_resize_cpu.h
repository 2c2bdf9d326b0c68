// _contrib_BilinearResize2D and its backward (MXNet 1.x's
// src/operator/contrib/bilinear_resize.cc), on NCHW data.
//
// Output pixel (h2, w2) reads the source position h1r = scale_h * h2 with
// align_corners (scale (in - 1) / (out - 1)), else max(scale_h * (h2 + 0.5)
// - 0.5, 0) (scale in / out); an output axis of size 1 has scale 0.  It
// blends rows h1 = int(h1r) and h1 + 1 (h1 alone at the last row) by
// h1r - h1, and columns likewise.  The backward adds each output gradient
// to those four inputs with the same weights.  Source indices and weights
// are computed in float (MXNet's), the blend in the compute type.  Planes
// (batch, channel) are split across cores, forward and backward: each plane
// is one thread's.
#ifndef MX_OPS_BILINEAR_RESIZE_CPU_H_
#define MX_OPS_BILINEAR_RESIZE_CPU_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.vision.bilinear_resize.
struct BilinearParam { int64_t align_corners; };

// One output index's source: the first input index, the step to the second
// (0 or 1) and the second's weight.
struct BilinearTap { int64_t i0, step; float w1; };

static inline std::vector<BilinearTap> bilinear_taps(int64_t in, int64_t out, bool align) {
  const float scale = out > 1 ? (align ? float(in - 1) / float(out - 1) : float(in) / float(out))
                              : 0.f;
  std::vector<BilinearTap> taps(size_t(out > 0 ? out : 0));
  for (int64_t o = 0; o < out; ++o) {
    float src = align ? scale * float(o) : float(double(scale) * (double(o) + 0.5) - 0.5);
    if (!align && src < 0.f) src = 0.f;
    const int64_t i0 = int64_t(src);
    taps[size_t(o)] = {i0, i0 < in - 1 ? 1 : 0, src - float(i0)};
  }
  return taps;
}

template <bool ADD, typename T>
static void bilinear_forward_loop(const MXOpCall *c, bool align) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &in = c->inputs[0], &out = c->outputs[0];
  const int64_t H = in.shape[2], W = in.shape[3], OH = out.shape[2], OW = out.shape[3];
  const std::vector<BilinearTap> th = bilinear_taps(H, OH, align), tw = bilinear_taps(W, OW, align);
  const T *x = static_cast<const T *>(in.dptr);
  T *y = static_cast<T *>(out.dptr);
  parallel_for_cost(out.shape[0] * out.shape[1], OH * OW * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      const T *src = x + pl * H * W;
      T *dst = y + pl * OH * OW;
      for (int64_t h2 = 0; h2 < OH; ++h2) {
        const BilinearTap &a = th[size_t(h2)];
        const A l1 = A(a.w1), l0 = A(1) - l1;
        const T *r0 = src + a.i0 * W, *r1 = r0 + a.step * W;
        for (int64_t w2 = 0; w2 < OW; ++w2) {
          const BilinearTap &b = tw[size_t(w2)];
          const A m1 = A(b.w1), m0 = A(1) - m1;
          const int64_t j = b.i0, s = b.step;
          const A v = l0 * (m0 * A(r0[j]) + m1 * A(r0[j + s])) +
                      l1 * (m0 * A(r1[j]) + m1 * A(r1[j + s]));
          nn_store<ADD>(dst, h2 * OW + w2, v);
        }
      }
    }
  });
}

// Inputs (data[, like]), outputs (output).
static int bilinear_resize_forward(MXOpCall *c) {
  const bool align = static_cast<const BilinearParam *>(c->params)->align_corners != 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (bilinear_forward_loop<ADD, T>(c, align))))
  return 0;
}

template <typename T>
static void bilinear_backward_loop(const MXOpCall *c, bool align) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &og = c->inputs[0], &dx_b = c->outputs[0];
  const int64_t H = dx_b.shape[2], W = dx_b.shape[3], OH = og.shape[2], OW = og.shape[3];
  const std::vector<BilinearTap> th = bilinear_taps(H, OH, align), tw = bilinear_taps(W, OW, align);
  const T *g = static_cast<const T *>(og.dptr);
  T *dx = static_cast<T *>(dx_b.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(dx_b.shape[0] * dx_b.shape[1], OH * OW * 4 + H * W,
                    [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      T *d = dx + pl * H * W;
      const T *src = g + pl * OH * OW;
      if (!add) std::memset(d, 0, size_t(H * W) * sizeof(T));
      for (int64_t h2 = 0; h2 < OH; ++h2) {
        const BilinearTap &a = th[size_t(h2)];
        const A l1 = A(a.w1), l0 = A(1) - l1;
        T *r0 = d + a.i0 * W, *r1 = r0 + a.step * W;
        for (int64_t w2 = 0; w2 < OW; ++w2) {
          const BilinearTap &b = tw[size_t(w2)];
          const A m1 = A(b.w1), m0 = A(1) - m1, v = A(src[h2 * OW + w2]);
          const int64_t j = b.i0, s = b.step;
          r0[j] = T(A(r0[j]) + l0 * m0 * v);
          r0[j + s] = T(A(r0[j + s]) + l0 * m1 * v);
          r1[j] = T(A(r1[j]) + l1 * m0 * v);
          r1[j + s] = T(A(r1[j + s]) + l1 * m1 * v);
        }
      }
    }
  });
}

// Inputs (out_grad, data: read for its shape[, like]), outputs (data_grad[,
// like_grad: zero, as in MXNet]).
static int bilinear_resize_backward(MXOpCall *c) {
  const bool align = static_cast<const BilinearParam *>(c->params)->align_corners != 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
    if (c->req[0] != MX_REQ_NULL) bilinear_backward_loop<T>(c, align);
    if (c->nout > 1 && c->req[1] != MX_REQ_NULL && c->req[1] != MX_REQ_ADD)
      std::memset(c->outputs[1].dptr, 0, size_t(mx_tblob_size(&c->outputs[1])) * sizeof(T));)
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_BILINEAR_RESIZE_CPU_H_
