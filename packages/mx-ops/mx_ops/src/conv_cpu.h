// Convolution and Deconvolution on the CPU: im2col + GEMM, MXNet's
// algorithm (src/operator/nn/convolution-inl.h).  Everything is phrased
// on one "convolution geometry": an image (C, H, W) is unfolded into a
// column matrix (C*kh*kw, Ho*Wo), and per group
//   forward      Y_g  = W_g   . col_g            (Convolution's forward)
//   data grad    col_g = W_g^T . dY_g, folded back (col2im) into the image
//   weight grad  dW_g += dY_g . col_g^T
// Deconvolution is the transpose of Convolution: its forward is the data
// grad above with the roles of image and output swapped, its data grad is
// the forward, so the two operators share these three primitives.
//
// 1-D (NCW) runs as 2-D with H = 1.  GEMM is scipy's BLAS (sgemm/dgemm
// from scipy.linalg.cython_blas), handed over once by _conv_cpu.pyx.
// Small per-sample GEMMs (LeNet) run one sample per OpenMP thread, each
// with its own column buffer; large ones run sample by sample on the
// calling thread and let the BLAS use its own threads.  The two pools must
// not take turns: OpenMP workers spin after a region and starve the BLAS
// threads (measured 2-4x slower on 2 cores), so the large path uses no
// OpenMP at all.
#ifndef MX_OPS_CONV_CPU_H_
#define MX_OPS_CONV_CPU_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "dtype.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.convolution (pad already derived from target_shape for
// Deconvolution); 1-D ops pack kernel (1, k), stride (1, s), ...
struct ConvParam {
  int64_t kernel[2], stride[2], dilate[2], pad[2];
  int64_t num_group, no_bias;
};

// Fortran BLAS signatures of scipy.linalg.cython_blas.
typedef void (*sgemm_fn)(char *, char *, int *, int *, int *, float *, float *, int *, float *,
                         int *, float *, float *, int *);
typedef void (*dgemm_fn)(char *, char *, int *, int *, int *, double *, double *, int *,
                         double *, int *, double *, double *, int *);
static sgemm_fn conv_sgemm = nullptr;
static dgemm_fn conv_dgemm = nullptr;
static inline void conv_set_blas(sgemm_fn s, dgemm_fn d) { conv_sgemm = s; conv_dgemm = d; }

// Row-major C (M x N) = op(A) op(B) + beta C, as the column-major
// C^T = op(B)^T op(A)^T: no data is transposed.
template <typename T>
static void gemm_rm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T *A, const T *B,
                    T beta, T *C) {
  if (M == 0 || N == 0) return;
  char opa = ta ? 'T' : 'N', opb = tb ? 'T' : 'N';
  int m = int(N), n = int(M), k = int(K);
  int lda = int(tb ? K : N), ldb = int(ta ? M : K), ldc = int(N);
  if (lda < 1) lda = 1;
  if (ldb < 1) ldb = 1;
  T one = 1;
  if constexpr (sizeof(T) == 4)
    conv_sgemm(&opb, &opa, &m, &n, &k, &one, (float *)B, &lda, (float *)A, &ldb, &beta, C,
               &ldc);
  else
    conv_dgemm(&opb, &opa, &m, &n, &k, &one, (double *)B, &lda, (double *)A, &ldb, &beta, C,
               &ldc);
}

// One call's sizes in convolution terms: image (N, C, H, W), output
// (N, F, Ho, Wo), weight (F, C/G, kh, kw).
struct ConvGeom {
  int64_t N, C, H, W, F, Ho, Wo, G, kh, kw, sh, sw, dh, dw, ph, pw;
  int64_t cols() const { return C * kh * kw; }           // rows of the column matrix
  int64_t P() const { return Ho * Wo; }
  int64_t Kg() const { return C / G * kh * kw; }
  int64_t Fg() const { return F / G; }
  // A 1x1 kernel at stride 1 without padding: the image is its own column matrix.
  bool identity() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
  }
};

static inline void spatial(const MXTBlob &b, int64_t *h, int64_t *w) {
  *h = b.ndim == 4 ? b.shape[2] : 1;
  *w = b.shape[b.ndim - 1];
}

// `img` is the image-side blob, `out` the output-side one.
static inline ConvGeom make_geom(const ConvParam &p, const MXTBlob &img, const MXTBlob &out) {
  ConvGeom g;
  g.N = img.shape[0];
  g.C = img.shape[1];
  spatial(img, &g.H, &g.W);
  g.F = out.shape[1];
  spatial(out, &g.Ho, &g.Wo);
  g.G = p.num_group;
  g.kh = p.kernel[0]; g.kw = p.kernel[1];
  g.sh = p.stride[0]; g.sw = p.stride[1];
  g.dh = p.dilate[0]; g.dw = p.dilate[1];
  g.ph = p.pad[0]; g.pw = p.pad[1];
  return g;
}

// Output columns ow in [lo, hi) read inside the image row for kernel tap
// kj: 0 <= ow*sw - pw + kj*dw < W.
static inline void valid_cols(const ConvGeom &g, int64_t kj, int64_t *lo, int64_t *hi) {
  const int64_t off = kj * g.dw - g.pw;            // iw = ow*sw + off
  int64_t a = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
  int64_t b = g.W - off <= 0 ? 0 : (g.W - off + g.sw - 1) / g.sw;
  if (b > g.Wo) b = g.Wo;
  if (a > b) a = b;
  *lo = a;
  *hi = b;
}

// Walks the column matrix row by row; per (row, oh) calls
// f(column-row pointer, image-row pointer or null for padding, lo, hi, off).
template <typename T, typename F>
static void col_walk(const ConvGeom &g, int64_t r0, int64_t r1, T *col, T *img, F f) {
  const int64_t P = g.P();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / (g.kh * g.kw), ki = r / g.kw % g.kh, kj = r % g.kw;
    int64_t lo, hi;
    valid_cols(g, kj, &lo, &hi);
    const int64_t off = kj * g.dw - g.pw;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
      T *crow = col + r * P + oh * g.Wo;
      T *irow = (ih >= 0 && ih < g.H) ? img + (c * g.H + ih) * g.W : nullptr;
      f(crow, irow, irow ? lo : 0, irow ? hi : 0, off);
    }
  }
}

// col = unfold(img), zeros where the kernel reads padding.
template <typename T>
static void im2col(const ConvGeom &g, const T *img, T *col) {
  const int64_t sw = g.sw;
  auto rows = [&](int64_t r0, int64_t r1) {
    col_walk<T>(g, r0, r1, col, const_cast<T *>(img),
                [&](T *crow, T *irow, int64_t lo, int64_t hi, int64_t off) {
      for (int64_t ow = 0; ow < lo; ++ow) crow[ow] = T(0);
      if (sw == 1) {
        if (hi > lo) std::memcpy(crow + lo, irow + lo + off, (hi - lo) * sizeof(T));
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) crow[ow] = irow[ow * sw + off];
      }
      for (int64_t ow = hi > lo ? hi : lo; ow < g.Wo; ++ow) crow[ow] = T(0);
    });
  };
  rows(0, g.cols());
}

// img += fold(col): the adjoint of im2col (one sample, one thread).
template <typename T>
static void col2im_add(const ConvGeom &g, const T *col, T *img) {
  const int64_t sw = g.sw;
  col_walk<T>(g, 0, g.cols(), const_cast<T *>(col), img,
              [&](T *crow, T *irow, int64_t lo, int64_t hi, int64_t off) {
    for (int64_t ow = lo; ow < hi; ++ow) irow[ow * sw + off] += crow[ow];
  });
}

// Runs body(n, col buffer) for every sample, in parallel over the batch
// when one sample's GEMMs are too small for the BLAS to thread (below
// 2^22 multiply-adds).  Returns -1 when a column buffer cannot be had.
template <typename T, typename B>
static int over_batch(const ConvGeom &g, B body) {
  const int64_t macs = g.Fg() * g.Kg() * g.P() * g.G;
  const bool own_col = !g.identity();
  const int64_t col_elems = own_col ? g.cols() * g.P() : 0;
  int failed = 0;
  auto run = [&](int64_t n0, int64_t n1) {
    T *col = own_col ? static_cast<T *>(std::malloc(col_elems * sizeof(T) + 1)) : nullptr;
    if (own_col && col == nullptr) {
      failed = 1;
      return;
    }
    for (int64_t n = n0; n < n1; ++n) body(n, col);
    std::free(col);
  };
  if (macs < (int64_t(1) << 22)) parallel_for_cost(g.N, macs, run);
  else run(0, g.N);
  return failed ? -1 : 0;
}

// out[n] (F x P) = W . unfold(img[n]) + beta out[n], per group.
template <typename T>
static int conv_fwd(const ConvGeom &g, const T *img, const T *w, T *out, T beta) {
  const int64_t isz = g.C * g.H * g.W, osz = g.F * g.P();
  return over_batch<T>(g, [&](int64_t n, T *col) {
    const T *x = img + n * isz;
    if (col) im2col(g, x, col);
    const T *cm = col ? col : x;
    for (int64_t q = 0; q < g.G; ++q)
      gemm_rm<T>(false, false, g.Fg(), g.P(), g.Kg(), w + q * g.Fg() * g.Kg(),
                 cm + q * g.Kg() * g.P(), beta, out + n * osz + q * g.Fg() * g.P());
  });
}

// img_grad[n] += fold(W^T . out_grad[n]), per group.
template <typename T>
static int conv_bwd_data(const ConvGeom &g, const T *ograd, const T *w, T *igrad) {
  const int64_t isz = g.C * g.H * g.W, osz = g.F * g.P();
  return over_batch<T>(g, [&](int64_t n, T *col) {
    T *dx = igrad + n * isz;
    // Without a column buffer the GEMM adds straight into the image.
    T *cm = col ? col : dx;
    for (int64_t q = 0; q < g.G; ++q)
      gemm_rm<T>(true, false, g.Kg(), g.P(), g.Fg(), w + q * g.Fg() * g.Kg(),
                 ograd + n * osz + q * g.Fg() * g.P(), col ? T(0) : T(1),
                 cm + q * g.Kg() * g.P());
    if (col) col2im_add(g, col, dx);
  });
}

// wgrad (F x Kg) = sum_n out_grad[n] . unfold(img[n])^T (+ wgrad when add).
// Batch-parallel threads sum into private buffers first (one lock per
// thread range); the serial path accumulates straight into wgrad.
template <typename T>
static int conv_bwd_weight(const ConvGeom &g, const T *img, const T *ograd, T *wgrad, bool add) {
  const int64_t isz = g.C * g.H * g.W, osz = g.F * g.P(), wsz = g.F * g.Kg();
  if (!add) std::memset(wgrad, 0, wsz * sizeof(T));
  if (g.N == 0) return 0;
  const int64_t macs = g.Fg() * g.Kg() * g.P() * g.G;
  const bool own_col = !g.identity();
  int failed = 0;
  auto run = [&](int64_t n0, int64_t n1, T *dw) {
    T *col = own_col ? static_cast<T *>(std::malloc(g.cols() * g.P() * sizeof(T) + 1)) : nullptr;
    if (own_col && col == nullptr) { failed = 1; return; }
    for (int64_t n = n0; n < n1; ++n) {
      const T *x = img + n * isz;
      if (col) im2col(g, x, col);
      const T *cm = col ? col : x;
      for (int64_t q = 0; q < g.G; ++q)
        gemm_rm<T>(false, true, g.Fg(), g.Kg(), g.P(), ograd + n * osz + q * g.Fg() * g.P(),
                   cm + q * g.Kg() * g.P(), T(1), dw + q * g.Fg() * g.Kg());
    }
    std::free(col);
  };
  if (macs >= (int64_t(1) << 22) || parallel_threads(g.N * macs, g.N) <= 1) {
    run(0, g.N, wgrad);
    return failed ? -1 : 0;
  }
  parallel_for_cost(g.N, macs, [&](int64_t n0, int64_t n1) {
    T *dw = static_cast<T *>(std::calloc(wsz + 1, sizeof(T)));
    if (dw == nullptr) { failed = 1; return; }
    run(n0, n1, dw);
#ifdef _OPENMP
#pragma omp critical(mx_conv_wgrad)
#endif
    for (int64_t i = 0; i < wsz; ++i) wgrad[i] += dw[i];
    std::free(dw);
  });
  return failed ? -1 : 0;
}

// out[n, f, :] = bias[f] (write) or += bias[f] (add): GEMMs then add onto it.
template <typename T>
static void fill_bias(const ConvGeom &g, int64_t F, int64_t P, const T *bias, T *out, bool add) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      T *o = out + (n * F + f) * P;
      const T b = bias ? bias[f] : T(0);
      if (add) for (int64_t i = 0; i < P; ++i) o[i] += b;
      else for (int64_t i = 0; i < P; ++i) o[i] = b;
    }
}

// bgrad[f] (=, +=) sum over n and positions of ograd[n, f, :].
template <typename T>
static void bias_grad(int64_t N, int64_t F, int64_t P, const T *ograd, T *bgrad, bool add) {
  for (int64_t f = 0; f < F; ++f) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T *o = ograd + (n * F + f) * P;
      for (int64_t i = 0; i < P; ++i) s += o[i];
    }
    bgrad[f] = add ? T(bgrad[f] + T(s)) : T(s);
  }
}

}  // namespace mxop
#endif  // MX_OPS_CONV_CPU_H_
