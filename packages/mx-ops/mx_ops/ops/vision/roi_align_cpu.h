// _contrib_ROIAlign and its backward (MXNet 1.x's
// src/operator/contrib/roi_align.cc, Detectron's ROIAlign), on NCHW data
// and (num_rois, 5) boxes [batch_index, x1, y1, x2, y2].
//
// A box is scaled by spatial_scale (less half a pixel with aligned); without
// aligned a box under one pixel wide or high counts as one.  Bin (ph, pw) is
// a grid_h x grid_w grid of samples (sample_ratio each way, or
// ceil(box size / pooled size)), each bilinearly interpolated (a sample
// further than one pixel outside the image is 0; one within it is clamped
// to the border) and averaged.  position_sensitive reads channel
// (c * PH + ph) * PW + pw for output channel c (R-FCN).  A batch index
// outside the batch gives 0.  The backward spreads each output gradient
// over the four neighbours of every sample with the same weights.  All
// arithmetic is in the compute type (float for float16), as MXNet's DType.
// The samples' offsets and weights are computed once per box and shared by
// its channels.  The forward splits (box, channel) planes across cores; the
// backward splits the input channels, so no two threads add to one element.
#ifndef MX_OPS_ROI_ALIGN_CPU_H_
#define MX_OPS_ROI_ALIGN_CPU_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.vision.roi_align (spatial_scale: a float32 value).
struct RoiAlignParam {
  int64_t pooled_h, pooled_w, sample_ratio, position_sensitive, aligned;
  double spatial_scale;
};

// One box's sampling geometry.
template <typename A>
struct RoiAlignBox {
  int64_t batch;                // -1: outside the batch
  A y0, x0, bin_h, bin_w;
  int64_t grid_h, grid_w;
  bool bad;                     // aligned with an empty box: MXNet's check fails
};

template <typename A, typename T>
static inline RoiAlignBox<A> roi_align_box(const RoiAlignParam &p, const T *box, int64_t N) {
  RoiAlignBox<A> g;
  const A scale = A(p.spatial_scale), off = p.aligned ? A(0.5) : A(0);
  const int64_t b = int64_t(double(box[0]));
  g.batch = b >= 0 && b < N ? b : -1;
  g.x0 = A(box[1]) * scale - off;
  g.y0 = A(box[2]) * scale - off;
  A w = A(box[3]) * scale - off - g.x0, h = A(box[4]) * scale - off - g.y0;
  g.bad = p.aligned && !(w > A(0) && h > A(0));
  if (!p.aligned) {
    w = w > A(1) ? w : A(1);
    h = h > A(1) ? h : A(1);
  }
  g.bin_h = h / A(p.pooled_h);
  g.bin_w = w / A(p.pooled_w);
  g.grid_h = p.sample_ratio > 0 ? p.sample_ratio : int64_t(std::ceil(h / A(p.pooled_h)));
  g.grid_w = p.sample_ratio > 0 ? p.sample_ratio : int64_t(std::ceil(w / A(p.pooled_w)));
  return g;
}

// The four neighbours (offsets in the plane) and weights of sample (y, x);
// false when the sample lies more than a pixel outside the image.
template <typename A>
static inline bool roi_bilinear(A y, A x, int64_t H, int64_t W, int64_t *o, A *w) {
  if (y < A(-1) || y > A(H) || x < A(-1) || x > A(W)) return false;
  if (y <= A(0)) y = A(0);
  if (x <= A(0)) x = A(0);
  int64_t yl = int64_t(y), xl = int64_t(x), yh, xh;
  if (yl >= H - 1) { yh = yl = H - 1; y = A(yl); } else { yh = yl + 1; }
  if (xl >= W - 1) { xh = xl = W - 1; x = A(xl); } else { xh = xl + 1; }
  const A ly = y - A(yl), lx = x - A(xl), hy = A(1) - ly, hx = A(1) - lx;
  o[0] = yl * W + xl; o[1] = yl * W + xh; o[2] = yh * W + xl; o[3] = yh * W + xh;
  w[0] = hy * hx; w[1] = hy * lx; w[2] = ly * hx; w[3] = ly * lx;
  return true;
}

// The in-image samples of every bin of one box, each as four plane offsets
// and weights, computed once per box and shared by its channels (MXNet's
// pre_calc): bin b's samples are [start[b], start[b + 1]).
template <typename A>
struct RoiAlignTable {
  std::vector<int64_t> off, start;
  std::vector<A> w;

  void build(const RoiAlignBox<A> &g, int64_t PH, int64_t PW, int64_t H, int64_t W) {
    off.clear();
    w.clear();
    start.assign(size_t(PH * PW + 1), 0);
    int64_t o[4];
    A wt[4];
    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw) {
        for (int64_t iy = 0; iy < g.grid_h; ++iy) {
          const A y = g.y0 + A(ph) * g.bin_h + (A(iy) + A(0.5)) * g.bin_h / A(g.grid_h);
          for (int64_t ix = 0; ix < g.grid_w; ++ix) {
            const A x = g.x0 + A(pw) * g.bin_w + (A(ix) + A(0.5)) * g.bin_w / A(g.grid_w);
            if (!roi_bilinear(y, x, H, W, o, wt)) continue;
            off.insert(off.end(), o, o + 4);
            w.insert(w.end(), wt, wt + 4);
          }
        }
        start[size_t(ph * PW + pw + 1)] = int64_t(off.size() / 4);
      }
  }
};

static const char kRoiAlignEmpty[] =     // the invoker prefixes the operator's name
    "with aligned=True every box needs a positive width and height";

template <bool ADD, typename T>
static int roi_align_forward_loop(MXOpCall *c, const RoiAlignParam &p) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &data = c->inputs[0];
  const int64_t N = data.shape[0], C = data.shape[1], H = data.shape[2], W = data.shape[3];
  const int64_t R = c->inputs[1].shape[0], PH = p.pooled_h, PW = p.pooled_w;
  const int64_t CO = c->outputs[0].shape[1];
  const T *x = static_cast<const T *>(data.dptr);
  const T *rois = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  std::atomic<bool> bad(false);
  parallel_for_cost(R * CO, PH * PW * 16, [&](int64_t lo, int64_t hi) {
    RoiAlignTable<A> t;
    RoiAlignBox<A> g;
    int64_t built = -1;                   // the box whose table t holds
    for (int64_t plane = lo; plane < hi; ++plane) {
      const int64_t r = plane / CO, ch = plane % CO;
      if (r != built) {
        g = roi_align_box<A>(p, rois + r * 5, N);
        if (g.bad) bad = true;
        if (g.batch >= 0 && !g.bad) t.build(g, PH, PW, H, W);
        built = r;
      }
      const A count = A(g.grid_h * g.grid_w > 1 ? g.grid_h * g.grid_w : 1);
      for (int64_t bin = 0; bin < PH * PW; ++bin) {
        A v = A(0);
        if (g.batch >= 0 && !g.bad) {
          const int64_t ci = p.position_sensitive ? ch * PH * PW + bin : ch;
          const T *img = x + (g.batch * C + ci) * H * W;
          for (int64_t k = t.start[size_t(bin)]; k < t.start[size_t(bin + 1)]; ++k) {
            const int64_t *o = &t.off[size_t(4 * k)];
            const A *w = &t.w[size_t(4 * k)];
            v += w[0] * A(img[o[0]]) + w[1] * A(img[o[1]]) + w[2] * A(img[o[2]]) +
                 w[3] * A(img[o[3]]);
          }
          v /= count;
        }
        nn_store<ADD>(out, plane * PH * PW + bin, v);
      }
    }
  });
  if (bad) { c->error = kRoiAlignEmpty; return -1; }
  return 0;
}

// Inputs (data, rois), outputs (output).
static int roi_align_forward(MXOpCall *c) {
  const RoiAlignParam &p = *static_cast<const RoiAlignParam *>(c->params);
  int rc = 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], rc = (roi_align_forward_loop<ADD, T>(c, p))))
  return rc;
}

template <typename T>
static int roi_align_backward_loop(MXOpCall *c, const RoiAlignParam &p) {
  typedef typename NnAcc<T>::type A;
  const MXTBlob &og = c->inputs[0], &data = c->inputs[1];
  const int64_t N = data.shape[0], C = data.shape[1], H = data.shape[2], W = data.shape[3];
  const int64_t R = og.shape[0], CO = og.shape[1], PH = p.pooled_h, PW = p.pooled_w;
  const T *g_out = static_cast<const T *>(og.dptr);
  const T *rois = static_cast<const T *>(c->inputs[2].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  std::atomic<bool> bad(false);
  // Each thread owns input channels [lo, hi) of every image; per box it
  // builds the sample table once and adds into its channels.
  parallel_for_cost(C, N * H * W / C + R * PH * PW * 16, [&](int64_t lo, int64_t hi) {
    if (!add)
      for (int64_t n = 0; n < N; ++n)
        std::memset(dx + (n * C + lo) * H * W, 0, size_t((hi - lo) * H * W) * sizeof(T));
    RoiAlignTable<A> t;
    for (int64_t r = 0; r < R; ++r) {
      const RoiAlignBox<A> g = roi_align_box<A>(p, rois + r * 5, N);
      if (g.bad) bad = true;
      if (g.batch < 0 || g.bad) continue;
      t.build(g, PH, PW, H, W);
      const A count = A(g.grid_h * g.grid_w > 1 ? g.grid_h * g.grid_w : 1);
      for (int64_t ci = lo; ci < hi; ++ci) {
        // The output channel and bins that read input channel ci.
        const int64_t ch = p.position_sensitive ? ci / (PH * PW) : ci;
        const int64_t bin0 = p.position_sensitive ? ci % (PH * PW) : 0;
        const int64_t bin1 = p.position_sensitive ? bin0 + 1 : PH * PW;
        T *d = dx + (g.batch * C + ci) * H * W;
        for (int64_t bin = bin0; bin < bin1; ++bin) {
          const A gv = A(g_out[(r * CO + ch) * PH * PW + bin]);
          for (int64_t k = t.start[size_t(bin)]; k < t.start[size_t(bin + 1)]; ++k)
            for (int j = 0; j < 4; ++j) {
              T &e = d[t.off[size_t(4 * k + j)]];
              e = T(A(e) + gv * t.w[size_t(4 * k + j)] / count);
            }
        }
      }
    }
  });
  if (bad) { c->error = kRoiAlignEmpty; return -1; }
  return 0;
}

// Inputs (out_grad, data: read for its shape, rois), outputs (data_grad,
// rois_grad: zero, as in MXNet).
static int roi_align_backward(MXOpCall *c) {
  const RoiAlignParam &p = *static_cast<const RoiAlignParam *>(c->params);
  int rc = 0;
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
    if (c->req[0] != MX_REQ_NULL) rc = roi_align_backward_loop<T>(c, p);
    if (c->req[1] != MX_REQ_NULL && c->req[1] != MX_REQ_ADD)
      std::memset(c->outputs[1].dptr, 0, size_t(mx_tblob_size(&c->outputs[1])) * sizeof(T));)
  return rc;
}

}  // namespace mxop
#endif  // MX_OPS_ROI_ALIGN_CPU_H_
