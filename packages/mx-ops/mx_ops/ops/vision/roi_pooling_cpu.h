// ROIPooling and its backward (MXNet 1.x's src/operator/roi_pooling.cc),
// on NCHW data and (num_rois, 5) boxes [batch_index, x1, y1, x2, y2].
//
// A box's corners are scaled by spatial_scale and rounded half away from
// zero (std::round); a box narrower than one pixel counts as one.  Bin
// (ph, pw) covers rows [floor(ph * bin_h), ceil((ph + 1) * bin_h)) from the
// box's top (columns likewise), clipped to the image; its output is the
// maximum there and maxidx the flat offset h * W + w of that maximum within
// the image plane (the first on ties; a bin of NaN or -inf alone gives
// -FLT_MAX, -inf in float16, and -1).  An empty bin, or a box whose batch
// index (truncated toward zero) is outside the batch, gives 0 with maxidx
// -1.  The backward adds each output gradient to the element maxidx names.  Forward planes (box, channel) are split across
// cores; the backward splits channels, so no two threads add to one
// element however the boxes overlap.
#ifndef MX_OPS_ROI_POOLING_CPU_H_
#define MX_OPS_ROI_POOLING_CPU_H_

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.vision.roi_pooling (spatial_scale: a float32 value, as
// MXNet's parameter).
struct RoiPoolParam { int64_t pooled_h, pooled_w; double spatial_scale; };

// The image of a box (or -1 when outside the batch) and its integer
// corners: scaled in the compute type A (MXNet's DType times its float
// spatial_scale), rounded half away from zero.
template <typename A, typename T>
static inline int64_t roi_pool_box(const T *box, int64_t batch, A scale, int64_t *x1,
                                   int64_t *y1, int64_t *x2, int64_t *y2) {
  const int64_t b = int64_t(double(box[0]));
  *x1 = int64_t(std::round(A(box[1]) * scale));
  *y1 = int64_t(std::round(A(box[2]) * scale));
  *x2 = int64_t(std::round(A(box[3]) * scale));
  *y2 = int64_t(std::round(A(box[4]) * scale));
  return b >= 0 && b < batch ? b : -1;
}

static inline int64_t clip_to(int64_t v, int64_t n) { return v < 0 ? 0 : (v > n ? n : v); }

template <typename T>
static void roi_pool_forward_loop(const MXOpCall *c, const RoiPoolParam &p) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &data = c->inputs[0];
  const int64_t N = data.shape[0], C = data.shape[1], H = data.shape[2], W = data.shape[3];
  const int64_t R = c->inputs[1].shape[0], PH = p.pooled_h, PW = p.pooled_w;
  const T *x = static_cast<const T *>(data.dptr);
  const T *rois = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  T *idx = static_cast<T *>(c->outputs[1].dptr);
  const int32_t req_out = c->req[0], req_idx = c->req[1];
  parallel_for_cost(R * C, H * W / (PH * PW) + PH * PW, [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) {
      const int64_t r = plane / C, ch = plane % C;
      int64_t x1, y1, x2, y2;
      const int64_t b = roi_pool_box(rois + r * 5, N, A(p.spatial_scale), &x1, &y1, &x2, &y2);
      const int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1;
      const int64_t rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
      const A bin_h = A(rh) / A(PH), bin_w = A(rw) / A(PW);
      const T *img = b < 0 ? nullptr : x + (b * C + ch) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw) {
          const int64_t o = plane * PH * PW + ph * PW + pw;
          const int64_t hs = clip_to(int64_t(std::floor(A(ph) * bin_h)) + y1, H);
          const int64_t he = clip_to(int64_t(std::ceil(A(ph + 1) * bin_h)) + y1, H);
          const int64_t ws = clip_to(int64_t(std::floor(A(pw) * bin_w)) + x1, W);
          const int64_t we = clip_to(int64_t(std::ceil(A(pw + 1) * bin_w)) + x1, W);
          A best = A(0);
          int64_t arg = -1;
          if (img && he > hs && we > ws) {
            best = A(-FLT_MAX);                 // MXNet's start: -inf in float16
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) {
                const A v = A(img[h * W + w]);
                if (v > best) { best = v; arg = h * W + w; }
              }
          }
          nn_put(out, o, best, req_out);
          nn_put(idx, o, A(arg), req_idx);
        }
    }
  });
}

// Inputs (data, rois), outputs (output, maxidx).
static int roi_pool_forward(MXOpCall *c) {
  const RoiPoolParam &p = *static_cast<const RoiPoolParam *>(c->params);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, roi_pool_forward_loop<T>(c, p))
  return 0;
}

template <typename T>
static void roi_pool_backward_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &og = c->inputs[0], &data = c->inputs[1];
  const int64_t N = data.shape[0], C = data.shape[1], H = data.shape[2], W = data.shape[3];
  const int64_t R = og.shape[0], P = og.shape[2] * og.shape[3];
  const T *g = static_cast<const T *>(og.dptr);
  const T *rois = static_cast<const T *>(c->inputs[2].dptr);
  const T *idx = static_cast<const T *>(c->inputs[3].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(C, N * H * W / C + R * P, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      if (!add)
        for (int64_t n = 0; n < N; ++n)
          std::memset(dx + (n * C + ch) * H * W, 0, size_t(H * W) * sizeof(T));
      for (int64_t r = 0; r < R; ++r) {
        const int64_t b = int64_t(double(rois[r * 5]));
        if (b < 0 || b >= N) continue;
        T *d = dx + (b * C + ch) * H * W;
        const int64_t o = (r * C + ch) * P;
        for (int64_t i = 0; i < P; ++i) {
          const int64_t a = int64_t(double(idx[o + i]));
          if (a >= 0 && a < H * W) d[a] = T(A(d[a]) + A(g[o + i]));
        }
      }
    }
  });
}

// Inputs (out_grad, data: read for its shape, rois, maxidx), outputs
// (data_grad, rois_grad: zero, as in MXNet).
static int roi_pool_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
    if (c->req[0] != MX_REQ_NULL) roi_pool_backward_loop<T>(c);
    if (c->req[1] != MX_REQ_NULL && c->req[1] != MX_REQ_ADD)
      std::memset(c->outputs[1].dptr, 0, size_t(mx_tblob_size(&c->outputs[1])) * sizeof(T));)
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ROI_POOLING_CPU_H_
