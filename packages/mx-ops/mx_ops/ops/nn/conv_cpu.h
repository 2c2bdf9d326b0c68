// Convolution and Deconvolution on the CPU as implicit GEMMs: MXNet's
// im2col + GEMM algorithm (src/operator/nn/convolution-inl.h) without the
// column matrix.  Everything is phrased on one "convolution geometry": an
// image (C, D, H, W) unfolds into a column matrix (C*kd*kh*kw, Do*Ho*Wo),
// and per group
//   forward      Y_g  = W_g   . col_g            (Convolution's forward)
//   data grad    col_g = W_g^T . dY_g, folded back (col2im) into the image
//   weight grad  dW_g += dY_g . col_g^T
// Deconvolution is the transpose of Convolution: its forward is the data
// grad above with the roles of image and output swapped, its data grad is
// the forward, so the two operators share these three passes.
//
// The GEMMs are gemm_cpu.h's.  The column matrix is never stored: its
// packer reads the image into the GEMM's packed panels directly, and the
// data grad's GEMM results are folded into the image block by block, so
// the passes touch the image and the output once each instead of writing
// and re-reading a column matrix 9x the image (3x3 kernels) as
// im2col + BLAS does.  float16 is computed in float32: packers widen, the
// results narrow once.
//
// Threads: each pass splits its work once over the thread pool (samples,
// position chunks, channel blocks or weight columns, chosen so no two
// threads write one element), and each thread runs single-threaded GEMMs
// on its packing buffers.  All temporary memory comes from the operator's
// workspace (TEMP_SPACE), laid out by ConvPlan; the Python workspace
// function sizes it with the same code (conv_workspace_bytes).
//
// Each pass has a second kernel for its common case, reading a
// zero-padded copy of one sample's channels with unit stride along W
// instead of packing unfolded values one at a time: the forward, and the
// stride-1 data grad as the convolution of out_grad, on a direct
// convolution kernel (conv_direct_isa.h), the weight grad as dot products
// over positions (wgrad_dot_isa.h).  The plan picks them where rows fill
// the vectors (ConvPlan::direct, ::dot); float16 keeps the GEMM passes.
//
// 1-D (NCW) and 2-D (NCHW) run as 3-D with D = 1 (and H = 1): the
// packers walk output rows (od, oh), each a run of Wo positions reading
// one image row (id, ih) per kernel tap, so the extra axis costs nothing
// on the 2-D path.
#ifndef MX_OPS_CONV_CPU_H_
#define MX_OPS_CONV_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "gemm_cpu.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.nn.convolution (pad already derived from target_shape for
// Deconvolution), axes (d, h, w): 2-D ops pack kernel (1, kh, kw), 1-D ops
// (1, 1, k), stride (1, ..., s), pad (0, ..., p).
struct ConvParam {
  int64_t kernel[3], stride[3], dilate[3], pad[3];
  int64_t num_group, no_bias;
};

// One call's sizes in convolution terms: image (N, C, D, H, W), output
// (N, F, Do, Ho, Wo), weight (F, C/G, kd, kh, kw).
struct ConvGeom {
  int64_t N, C, D, H, W, F, Do, Ho, Wo, G;
  int64_t kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw;
  int64_t taps() const { return kd * kh * kw; }
  int64_t P() const { return Do * Ho * Wo; }
  int64_t Cg() const { return C / G; }
  int64_t Kg() const { return C / G * taps(); }     // rows of a group's column matrix
  int64_t Fg() const { return F / G; }
  int64_t plane() const { return D * H * W; }
  int64_t macs() const { return N * F * Kg() * P(); }
};

// (D, H, W) of an NCW, NCHW or NCDHW shape; absent axes are 1.
static inline void spatial(const int64_t *shape, int ndim, int64_t *d, int64_t *h,
                           int64_t *w) {
  *d = ndim == 5 ? shape[2] : 1;
  *h = ndim >= 4 ? shape[ndim - 2] : 1;
  *w = shape[ndim - 1];
}

// `img` is the image-side shape, `out` the output-side one.
static inline ConvGeom make_geom(const ConvParam &p, const int64_t *img, const int64_t *out,
                                 int ndim) {
  ConvGeom g;
  g.N = img[0];
  g.C = img[1];
  spatial(img, ndim, &g.D, &g.H, &g.W);
  g.F = out[1];
  spatial(out, ndim, &g.Do, &g.Ho, &g.Wo);
  g.G = p.num_group;
  g.kd = p.kernel[0]; g.kh = p.kernel[1]; g.kw = p.kernel[2];
  g.sd = p.stride[0]; g.sh = p.stride[1]; g.sw = p.stride[2];
  g.dd = p.dilate[0]; g.dh = p.dilate[1]; g.dw = p.dilate[2];
  g.pd = p.pad[0]; g.ph = p.pad[1]; g.pw = p.pad[2];
  return g;
}

static inline ConvGeom make_geom(const ConvParam &p, const MXTBlob &img, const MXTBlob &out) {
  return make_geom(p, img.shape, out.shape, img.ndim);
}

// Row r of a group's column matrix: channel c (within the group), kernel
// tap (kz, ki, kj); output columns ow in [lo, hi) read inside the image
// row, at image column ow*sw + off.
struct ColRow {
  int64_t c, kz, ki, lo, hi, off;
};

static inline ColRow col_row(const ConvGeom &g, int64_t r) {
  ColRow t;
  t.c = r / g.taps();
  t.kz = r / (g.kh * g.kw) % g.kd;
  t.ki = r / g.kw % g.kh;
  const int64_t kj = r % g.kw;
  t.off = kj * g.dw - g.pw;
  int64_t a = t.off >= 0 ? 0 : (-t.off + g.sw - 1) / g.sw;
  int64_t b = g.W - t.off <= 0 ? 0 : (g.W - t.off + g.sw - 1) / g.sw;
  if (b > g.Wo) b = g.Wo;
  if (a > b) a = b;
  t.lo = a;
  t.hi = b;
  return t;
}

// The image row that output row (od, oh) reads for row `t`, or null
// (padding).
template <typename S>
static inline S *image_row(const ConvGeom &g, const ColRow &t, S *chan_plane0, int64_t od,
                           int64_t oh) {
  const int64_t id = od * g.sd - g.pd + t.kz * g.dd;
  const int64_t ih = oh * g.sh - g.ph + t.ki * g.dh;
  return (id >= 0 && id < g.D && ih >= 0 && ih < g.H)
             ? chan_plane0 + ((t.c * g.D + id) * g.H + ih) * g.W : nullptr;
}

static inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// d[i * ds] = column-matrix values of row `t` at output columns
// ow0 .. ow0+n-1 of one output row (irow: its image row, or null).
template <typename A, typename S>
MX_PACKER void unfold_run(const S *irow, const ColRow &t, int64_t sw, int64_t ow0,
                              int64_t n, A *d, int64_t ds) {
  const int64_t end = ow0 + n;
  const int64_t v0 = irow ? clamp64(t.lo, ow0, end) : end;
  const int64_t v1 = irow ? clamp64(t.hi, v0, end) : end;
  if (ds == 1) {
    for (int64_t ow = ow0; ow < v0; ++ow) d[ow - ow0] = A(0);
    if (sw == 1) {
      const S *s = irow + t.off;
      for (int64_t ow = v0; ow < v1; ++ow) d[ow - ow0] = to_compute<A>(s[ow]);
    } else {
      for (int64_t ow = v0; ow < v1; ++ow) d[ow - ow0] = to_compute<A>(irow[ow * sw + t.off]);
    }
    for (int64_t ow = v1; ow < end; ++ow) d[ow - ow0] = A(0);
  } else {
    for (int64_t ow = ow0; ow < v0; ++ow) d[(ow - ow0) * ds] = A(0);
    for (int64_t ow = v0; ow < v1; ++ow)
      d[(ow - ow0) * ds] = to_compute<A>(irow[ow * sw + t.off]);
    for (int64_t ow = v1; ow < end; ++ow) d[(ow - ow0) * ds] = A(0);
  }
}

// Calls f(od, oh, ow, n, offset) for the output-row pieces of positions
// [p0, p0 + np): n positions starting at (od, oh, ow), `offset` from p0.
template <typename F>
static inline void for_row_pieces(const ConvGeom &g, int64_t p0, int64_t np, F f) {
  const int64_t row = p0 / g.Wo;
  int64_t od = row / g.Ho, oh = row - od * g.Ho, ow = p0 - row * g.Wo, done = 0;
  while (done < np) {
    const int64_t n = np - done < g.Wo - ow ? np - done : g.Wo - ow;
    f(od, oh, ow, n, done);
    done += n;
    ow = 0;
    if (++oh == g.Ho) {
      oh = 0;
      ++od;
    }
  }
}

// A run of output positions within one output row.
struct RowPiece {
  int64_t od, oh, ow, n, at;
};

// B's panels of the forward GEMM: column-matrix rows [k0, k0+kc) x
// positions [p0, p0+nc) as ceil(nc/NR) panels of kc x NR.  The pieces of
// a panel (the output rows its positions cross) are found once and reused
// by every row; a piece inside the image (the common case) is a plain
// copy.
template <typename A, typename S>
MX_PACKER void unfold_panels(const ConvGeom &g, const S *x, int64_t k0, int64_t kc, int64_t p0,
                          int64_t nc, int64_t NR, A *dst) {
  ColRow rows[kGemmMaxKC];
  RowPiece pieces[kGemmMaxNR + 1];
  for (int64_t k = 0; k < kc; ++k) rows[k] = col_row(g, k0 + k);
  for (int64_t jp = 0; jp < nc; jp += NR, dst += kc * NR) {
    const int64_t np = nc - jp < NR ? nc - jp : NR;
    int npieces = 0;
    for_row_pieces(g, p0 + jp, np,
                   [&](int64_t od, int64_t oh, int64_t ow, int64_t n, int64_t at) {
                     pieces[npieces++] = RowPiece{od, oh, ow, n, at};
                   });
    for (int64_t k = 0; k < kc; ++k) {
      const ColRow &r = rows[k];
      A *d = dst + k * NR;
      for (int i = 0; i < npieces; ++i) {
        const RowPiece &pc = pieces[i];
        const S *irow = image_row(g, r, x, pc.od, pc.oh);
        A *dd = d + pc.at;
        if (irow && pc.ow >= r.lo && pc.ow + pc.n <= r.hi) {
          if (g.sw == 1) {
            const S *s = irow + r.off + pc.ow;
            for (int64_t j = 0; j < pc.n; ++j) dd[j] = to_compute<A>(s[j]);
          } else {
            const S *s = irow + r.off + pc.ow * g.sw;
            for (int64_t j = 0; j < pc.n; ++j) dd[j] = to_compute<A>(s[j * g.sw]);
          }
        } else {
          unfold_run<A>(irow, r, g.sw, pc.ow, pc.n, dd, 1);
        }
      }
      for (int64_t j = np; j < NR; ++j) d[j] = A(0);
    }
  }
}

// A's panels of the weight-grad GEMM: column-matrix rows [r0, r0+nr) as
// lanes (ceil(nr/R) panels of kc x R) over positions [p0, p0+kc).
template <int R, typename A, typename S>
MX_PACKER void unfold_lanes(const ConvGeom &g, const S *x, int64_t r0, int64_t nr, int64_t p0,
                         int64_t kc, A *dst) {
  for (int64_t lr = 0; lr < nr; lr += R, dst += R * kc) {
    const int n = int(nr - lr < R ? nr - lr : R);
    if (n < R) std::memset(dst, 0, R * kc * sizeof(A));     // the padding lanes
    for (int i = 0; i < n; ++i) {
      const ColRow r = col_row(g, r0 + lr + i);
      for_row_pieces(g, p0, kc,
                     [&](int64_t od, int64_t oh, int64_t ow, int64_t m, int64_t at) {
                       unfold_run<A>(image_row(g, r, x, od, oh), r, g.sw, ow, m,
                                     dst + at * R + i, R);
                     });
    }
  }
}

// ------------------------------------------- data grad as a convolution
// With stride 1 the data grad is itself a convolution: of out_grad (F
// channels) with the weight flipped along every spatial axis and its two
// channel axes swapped, dilation kept, padding d*(k-1) - p.  Run on the
// direct kernel (conv_direct_isa.h) it multiplies straight into the image,
// without the fold's taps-times larger result block (27x for 3x3x3) to
// write and re-add, and without packing the unfolded out_grad.
static inline bool dgrad_as_conv(const ConvGeom &g) {
  auto axis = [](int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t p) {
    return s == 1 && p <= d * (k - 1) && in == out + d * (k - 1) - 2 * p;
  };
  return axis(g.D, g.Do, g.kd, g.sd, g.dd, g.pd) && axis(g.H, g.Ho, g.kh, g.sh, g.dh, g.ph) &&
         axis(g.W, g.Wo, g.kw, g.sw, g.dw, g.pw);
}

// The geometry of that convolution: out_grad is its image, the data grad
// its output.
static inline ConvGeom dgrad_geom(const ConvGeom &g) {
  ConvGeom t = g;
  t.C = g.F; t.D = g.Do; t.H = g.Ho; t.W = g.Wo;
  t.F = g.C; t.Do = g.D; t.Ho = g.H; t.Wo = g.W;
  t.pd = g.dd * (g.kd - 1) - g.pd;
  t.ph = g.dh * (g.kh - 1) - g.ph;
  t.pw = g.dw * (g.kw - 1) - g.pw;
  return t;
}

// The weight of that convolution as the direct kernel's rows: per group,
// row (f, t) holds w[f, c, taps - 1 - t] for every channel c (reversing
// the linear tap index flips all three spatial axes).
template <typename A>
static void flip_weight(const ConvGeom &g, const A *w, A *wt) {
  const int64_t taps = g.taps(), Fg = g.Fg(), Cg = g.Cg();
  for (int64_t q = 0; q < g.G; ++q)
    for (int64_t f = 0; f < Fg; ++f)
      for (int64_t c = 0; c < Cg; ++c) {
        const A *src = w + ((q * Fg + f) * Cg + c) * taps;
        A *dst = wt + ((q * Fg + f) * taps + taps - 1) * Cg + c;
        for (int64_t t = 0; t < taps; ++t) dst[-t * Cg] = src[t];
      }
}

// ------------------------------------------------------------------ plan
// How a pass splits its work and lays out its workspace: per thread the
// GEMM packing buffers, a result buffer and (float16) an image-plane
// buffer; after them a buffer shared by all threads.  Counts are elements
// of the compute type A.
enum ConvPass { CONV_FWD = 0, CONV_DGRAD = 1, CONV_WGRAD = 2 };

struct ConvPlan {
  int nt = 1;                 // threads
  int64_t items = 0;          // work items, split in contiguous ranges
  int64_t chunk = 0;          // positions per item (FWD) / per GEMM (DGRAD)
  int64_t cb = 0;             // channels per item (DGRAD)
  int64_t wcols = 0;          // weight columns per item (WGRAD, split_k false)
  bool split_k = false;       // WGRAD: threads take samples, partial sums
  bool f_major = false;       // WGRAD: dW = dY . unfold^T (see conv_bwd_weight)
  bool direct = false;        // FWD, DGRAD: conv_direct_isa.h's kernel
  bool dot = false;           // WGRAD: wgrad_dot_isa.h's kernel on a padded image
  int64_t pack = 0, cbuf = 0, plane = 0, shared = 0;
  GemmBlocks blk;

  static int64_t align(int64_t elems, int64_t esz) { return round_up(elems * esz, 64); }
  int64_t slab_bytes(int64_t esz) const {
    return align(pack, esz) + align(cbuf, esz) + align(plane, esz);
  }
  int64_t bytes(int64_t esz) const { return nt * slab_bytes(esz) + align(shared, esz); }
};

// Result buffers: the float16 forward's near 256 KiB of floats, the data
// grad's (rows x positions, folded into the image) near 1 MiB: its A
// operand (weight rows) is repacked for every position chunk, so chunks
// must be long.  Both stay in L2.
constexpr int64_t kConvBufElems = int64_t(1) << 16;
constexpr int64_t kConvFoldElems = int64_t(1) << 18;
// The weight grad sums samples into per-chunk partial weights when all of
// them fit in this many elements, else splits the weight's columns.
constexpr int64_t kConvPartialElems = int64_t(1) << 20;
// The weight grad's dot-product kernel and the data grad's direct kernel
// pad a sample's group of channels (image, out_grad) when the copy takes
// at most this many elements (8 MiB of floats).
constexpr int64_t kConvPaddedElems = int64_t(1) << 21;

// Elements of one channel of the zero-padded image.
static inline int64_t padded_plane(const ConvGeom &g) {
  return (g.D + 2 * g.pd) * (g.H + 2 * g.ph) * (g.W + 2 * g.pw);
}

// The unfolded image's rows in the padded image.
static inline PaddedLanes padded_lanes(const ConvGeom &g) {
  const int64_t Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw;
  return PaddedLanes{g.kd, g.kh, g.kw, padded_plane(g), g.dd * Hp * Wp, g.dh * Wp, g.dw};
}

// xp = the channels [0, Cg) of image x zero-padded (Cg x padded_plane).
template <typename A>
static void pad_image(const ConvGeom &g, const A *x, A *xp) {
  const int64_t Dp = g.D + 2 * g.pd, Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw;
  std::memset(xp, 0, g.Cg() * Dp * Hp * Wp * sizeof(A));
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t d = 0; d < g.D; ++d)
      for (int64_t h = 0; h < g.H; ++h)
        std::memcpy(xp + ((c * Dp + d + g.pd) * Hp + h + g.ph) * Wp + g.pw,
                    x + ((c * g.D + d) * g.H + h) * g.W, g.W * sizeof(A));
}

// The dot-product kernel's operands for one sample's group: out_grad rows
// dy, padded image xp, results into dw as F-major (f, r) or Kg-major.
template <typename A>
static inline WgradDot<A> wgrad_dot_args(const ConvGeom &g, const A *dy, const A *dy_end,
                                         const A *xp, A *dw, bool f_major, bool accumulate) {
  const int64_t Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw;
  WgradDot<A> a;
  a.dy = dy;
  a.dy_end = dy_end;
  a.xp = xp;
  a.F = g.Fg(); a.P = g.P(); a.Do = g.Do; a.Ho = g.Ho; a.Wo = g.Wo;
  a.step_d = g.sd * Hp * Wp;
  a.step_h = g.sh * Wp;
  a.lanes = padded_lanes(g);
  a.dw = dw;
  a.ldf = f_major ? g.Kg() : 1;
  a.ldr = f_major ? 1 : g.Fg();
  a.accumulate = accumulate;
  return a;
}

template <class Isa, typename A>
static ConvPlan conv_plan(const ConvGeom &g, int pass, bool half, int nt_max) {
  ConvPlan pl;
  pl.blk = gemm_blocks<Isa, A>();
  const int64_t NR = pl.blk.NR;
  const int64_t NG = g.N * g.G, P = g.P(), want = 4 * int64_t(nt_max);
  // Threads: parallel.h's rule on the multiply-adds, capped by the items.
  auto threads = [&](int64_t items) {
    int nt = parallel_threads(g.macs(), items);
    return nt < nt_max ? nt : nt_max;
  };
  // The direct kernel on convolution t (the forward's, or the data
  // grad's as a convolution), where t's rows are read with unit stride and
  // fill at least 4/5 of the vectors they take (the packed GEMM is as fast
  // on shorter rows: 20 or 24 of 32 AVX-512 lanes), and its output
  // channels half a register tile: items are
  // (sample, group, block of output rows), each padding its image channels;
  // the weight, in the kernel's layout, is shared.
  auto direct = [&](const ConvGeom &t) {
    typedef typename Isa::template Direct<A> DT;
    if (half || t.sw != 1 || 5 * t.Wo < 4 * round_up(t.Wo, DT::W) || 2 * t.Fg() < DT::MF ||
        t.Cg() * padded_plane(t) > kConvPaddedElems)
      return false;
    const int64_t rows = t.Do * t.Ho;
    const int64_t per = NG < want ? (want + NG - 1) / NG : 1;
    pl.direct = true;
    pl.chunk = (rows + per - 1) / per;                 // output rows per item
    pl.items = NG * ((rows + pl.chunk - 1) / pl.chunk);
    pl.nt = threads(pl.items);
    pl.plane = t.Cg() * padded_plane(t) + DT::W;      // a vector's slack
    pl.shared = t.F * t.Kg() + DT::MF;
    return true;
  };
  if (pass == CONV_FWD && direct(g)) {
    return pl;
  } else if (pass == CONV_FWD) {
    // Items: (sample, group, position chunk); about 4 items per thread at
    // least, so that threads starting late are made up for, and (float16)
    // chunks that bound the float result block.
    const int64_t per = NG < want ? (want + NG - 1) / NG : 1;
    int64_t chunk = round_up((P + per - 1) / per, NR);
    if (half) {
      int64_t cap = kConvBufElems / g.Fg() / NR * NR;
      if (cap < NR) cap = NR;
      if (chunk > cap) chunk = cap;
    }
    pl.chunk = chunk < P ? chunk : P;
    pl.items = NG * ((P + pl.chunk - 1) / pl.chunk);
    pl.nt = threads(pl.items);
    pl.cbuf = half ? g.Fg() * pl.chunk : 0;
  } else if (pass == CONV_DGRAD && g.taps() > 1 && dgrad_as_conv(g) && direct(dgrad_geom(g))) {
    // (A 1x1 data grad has nothing to fold: its GEMM is faster.)
    return pl;
  } else if (pass == CONV_DGRAD) {
    // Items: (sample, group, channel block), each folding into its own
    // channels; the GEMM runs in position chunks that keep its result
    // (rows x chunk) near kConvFoldElems.
    int64_t nblk = NG < want ? (want + NG - 1) / NG : 1;
    if (nblk > g.Cg()) nblk = g.Cg();
    int64_t cb = (g.Cg() + nblk - 1) / nblk;
    if (half) {            // the float image block of float16 stays bounded too
      int64_t cap = 4 * kConvBufElems / g.plane();
      if (cap < 1) cap = 1;
      if (cb > cap) cb = cap;
    }
    pl.cb = cb;
    pl.items = NG * ((g.Cg() + pl.cb - 1) / pl.cb);
    const int64_t rows = pl.cb * g.taps();
    int64_t chunk = kConvFoldElems / rows / NR * NR;
    if (chunk < NR) chunk = NR;
    pl.chunk = chunk < P ? chunk : P;
    pl.nt = threads(pl.items);
    pl.cbuf = rows * pl.chunk;
    pl.plane = half ? pl.cb * g.plane() : 0;
  } else {
    // Weight grad: items are chunks of samples, each summed into its own
    // partial weight (the partials are added in chunk order, so the result
    // does not depend on which thread ran what); when the partials would be
    // too big, items are column blocks of the weight instead, each summing
    // over every sample.
    const int64_t wsz = g.F * g.Kg(), Fg = g.Fg();
    // The filters are the GEMM's rows (6-row panels) when as its columns
    // (NR-column panels) they would leave more of the register tile idle:
    // 32 filters fill half of AVX-512's 64-column float panel.
    pl.f_major = round_up(Fg, pl.blk.NR) * 8 > round_up(Fg, pl.blk.MR) * 9;
    int64_t chunks = g.N < 2 * int64_t(nt_max) ? g.N : 2 * int64_t(nt_max);
    if (chunks * wsz > kConvPartialElems) chunks = int64_t(nt_max);
    if (chunks >= 2 && chunks * wsz <= kConvPartialElems && threads(chunks) > 1) {
      const int64_t per = (g.N + chunks - 1) / chunks;
      pl.split_k = true;
      pl.chunk = per;                                   // samples per item
      pl.items = (g.N + per - 1) / per;
      pl.nt = threads(pl.items);
      pl.shared = pl.items * wsz;
    } else {
      const int64_t unit = pl.f_major ? NR : pl.blk.MR;
      const int64_t pg = (g.Kg() + unit - 1) / unit;    // panels per group
      int64_t per = (g.G * pg + want - 1) / want;
      if (per > pg) per = pg;
      pl.wcols = per * unit;
      pl.items = g.G * ((pg + per - 1) / per);
      pl.nt = threads(pl.items);
      pl.shared = wsz;
    }
    // The dot-product kernel where the GEMM would take the filters as its
    // rows (few filters: the unfolded image is the operand it transposes)
    // and the image rows are read with unit stride and fill its vectors;
    // it needs no packing buffers, only a padded copy of one sample's
    // group of channels.  With many filters the Kg-major GEMM is as fast.
    const int64_t padded = g.Cg() * padded_plane(g);
    pl.dot = pl.f_major && !half && g.sw == 1 && g.Wo >= Isa::template Dot<A>::W &&
             padded <= kConvPaddedElems;
    if (pl.dot) {
      pl.plane = padded + Isa::template Dot<A>::W;      // the tail loads' slack
      return pl;
    }
  }
  pl.pack = gemm_pack_elems(pl.blk);
  return pl;
}

// The thread's part of the workspace.
template <typename A>
struct ConvSlab {
  A *abuf, *bbuf, *cbuf, *plane;
};

template <typename A>
static inline ConvSlab<A> conv_slab(const ConvPlan &pl, void *ws, int t) {
  const int64_t esz = sizeof(A);
  char *base = static_cast<char *>(ws) + t * pl.slab_bytes(esz);
  ConvSlab<A> s;
  s.abuf = reinterpret_cast<A *>(base);
  s.bbuf = s.abuf + round_up(pl.blk.MC * pl.blk.KC, 16);
  s.cbuf = reinterpret_cast<A *>(base + ConvPlan::align(pl.pack, esz));
  s.plane = reinterpret_cast<A *>(base + ConvPlan::align(pl.pack, esz) +
                                  ConvPlan::align(pl.cbuf, esz));
  return s;
}

template <typename A>
static inline A *conv_shared(const ConvPlan &pl, void *ws) {
  return reinterpret_cast<A *>(static_cast<char *>(ws) + pl.nt * pl.slab_bytes(sizeof(A)));
}

// out[n, f, :] = bias[f] (write) or += bias[f] (add).
template <typename T>
static void fill_bias(int64_t N, int64_t F, int64_t P, const T *bias, T *out, bool add) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      T *o = out + (n * F + f) * P;
      const T b = bias[f];
      if (add) for (int64_t i = 0; i < P; ++i) o[i] = T(o[i] + b);
      else for (int64_t i = 0; i < P; ++i) o[i] = b;
    }
}

// ------------------------------------------------------ direct kernel
// out (=, +=) convolution t of img on the direct kernel (ConvPlan::direct),
// wt the weight in its layout (per group Kg rows of Fg values): per item,
// the sample's image channels of the group padded, then output rows
// [r0, r1) of the group's channels.
template <class Isa, typename A>
static void conv_direct_pass(const ConvGeom &t, const ConvPlan &pl, void *ws, const A *img,
                             const A *wt, A *out, bool accumulate) {
  const int64_t rows = t.Do * t.Ho, blocks = (rows + pl.chunk - 1) / pl.chunk;
  const int64_t Hp = t.H + 2 * t.ph, Wp = t.W + 2 * t.pw;
  gemm_team(pl.nt, pl.items, [&](int th, int64_t it) {
    const ConvSlab<A> sl = conv_slab<A>(pl, ws, th);
    const int64_t nq = it / blocks, n = nq / t.G, q = nq % t.G;
    const int64_t r0 = it % blocks * pl.chunk, r1 = r0 + pl.chunk < rows ? r0 + pl.chunk : rows;
    pad_image(t, img + (n * t.C + q * t.Cg()) * t.plane(), sl.plane);
    ConvDirect<A> a;
    a.xp = sl.plane;
    a.wt = wt + q * t.Kg() * t.Fg();
    a.lanes = padded_lanes(t);
    a.Cin = t.Cg(); a.C = t.Fg(); a.P = t.P(); a.Ho = t.Ho; a.Wo = t.Wo;
    a.step_d = t.sd * Hp * Wp;
    a.step_h = t.sh * Wp;
    a.out = out + (n * t.F + q * t.Fg()) * t.P();
    a.accumulate = accumulate;
    Isa::template conv_direct<A>(a, r0, r1);
  });
}

// The forward's weight in the direct kernel's layout: per group, row r
// holds w[f, r] for every filter f.
template <typename A>
static void transpose_weight(const ConvGeom &g, const A *w, A *wt) {
  const int64_t Fg = g.Fg(), Kg = g.Kg();
  for (int64_t q = 0; q < g.G; ++q)
    for (int64_t f = 0; f < Fg; ++f)
      for (int64_t r = 0; r < Kg; ++r) wt[(q * Kg + r) * Fg + f] = w[(q * Fg + f) * Kg + r];
}

// ---------------------------------------------------------------- forward
// out[n] (F x P) = (accumulate ? out[n] : 0) + bias + W . unfold(img[n]),
// per group.  S is the storage type, A the compute type.
template <class Isa, typename S, typename A>
static void conv_fwd(const ConvGeom &g, const ConvPlan &pl, void *ws, const S *img, const S *w,
                     const S *bias, S *out, bool accumulate) {
  if constexpr (sizeof(S) == sizeof(A)) {
    if (pl.direct) {
      A *wt = conv_shared<A>(pl, ws), *o = reinterpret_cast<A *>(out);
      transpose_weight(g, reinterpret_cast<const A *>(w), wt);
      if (bias) {             // the bias first, the kernel adds onto it
        fill_bias(g.N, g.F, g.P(), reinterpret_cast<const A *>(bias), o, accumulate);
        accumulate = true;
      }
      conv_direct_pass<Isa, A>(g, pl, ws, reinterpret_cast<const A *>(img), wt, o, accumulate);
      return;
    }
  }
  constexpr bool same = sizeof(S) == sizeof(A);
  const GemmBlocks blk = pl.blk;
  const int64_t NR = blk.NR;
  const int64_t P = g.P(), Fg = g.Fg(), Kg = g.Kg(), chunks = (P + pl.chunk - 1) / pl.chunk;
  gemm_team(pl.nt, pl.items, [&](int t, int64_t it) {
    const ConvSlab<A> sl = conv_slab<A>(pl, ws, t);
    const int64_t nq = it / chunks, n = nq / g.G, q = nq % g.G;
    const int64_t pb = it % chunks * pl.chunk, pn = P - pb < pl.chunk ? P - pb : pl.chunk;
    const S *x = img + (n * g.C + q * g.Cg()) * g.plane();
    const S *wq = w + q * Fg * Kg;
    S *o = out + (n * g.F + q * Fg) * P + pb;
    A *C = same ? reinterpret_cast<A *>(o) : sl.cbuf;
    const int64_t ldc = same ? P : pn;
    bool acc = accumulate;
    if (bias || !same) {          // lay down bias (+ old values), GEMM adds on
      for (int64_t f = 0; f < Fg; ++f) {
        const A bv = bias ? to_compute<A>(bias[q * Fg + f]) : A(0);
        A *cr = C + f * ldc;
        const S *orow = o + f * P;
        if (!accumulate) for (int64_t p = 0; p < pn; ++p) cr[p] = bv;
        else if (same) for (int64_t p = 0; p < pn; ++p) cr[p] += bv;
        else for (int64_t p = 0; p < pn; ++p) cr[p] = to_compute<A>(orow[p]) + bv;
      }
      acc = true;
    }
    Isa::template gemm<A>(
        Fg, pn, Kg,
        [&](int64_t a0, int64_t k0, int64_t mc, int64_t kc, A *d) MX_INLINE {
          pack_lanes_strided<Isa::template Tile<A>::MR>(wq, Kg, a0, k0, mc, kc, d);
        },
        [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, A *d) MX_INLINE {
          unfold_panels<A>(g, x, k0, kc, pb + j0, nc, NR, d);
        },
        C, ldc, acc, sl.abuf, sl.bbuf, blk.MC, blk.KC, blk.NC);
    if (!same)
      for (int64_t f = 0; f < Fg; ++f)
        for (int64_t p = 0; p < pn; ++p) o[f * P + p] = S(C[f * ldc + p]);
  });
}

// -------------------------------------------------------------- data grad
// igrad[n] = (accumulate ? igrad[n] : 0) + fold(W^T . out_grad[n]), per
// group; folding adds each result block into the item's own channels.
template <class Isa, typename S, typename A>
static void conv_bwd_data(const ConvGeom &g, const ConvPlan &pl, void *ws, const S *ograd,
                          const S *w, S *igrad, bool accumulate) {
  if constexpr (sizeof(S) == sizeof(A)) {
    if (pl.direct) {
      A *wt = conv_shared<A>(pl, ws);
      flip_weight(g, reinterpret_cast<const A *>(w), wt);
      conv_direct_pass<Isa, A>(dgrad_geom(g), pl, ws, reinterpret_cast<const A *>(ograd), wt,
                               reinterpret_cast<A *>(igrad), accumulate);
      return;
    }
  }
  constexpr bool same = sizeof(S) == sizeof(A);
  const GemmBlocks blk = pl.blk;
  const int64_t P = g.P(), Fg = g.Fg(), Kg = g.Kg(), HW = g.plane(), taps = g.taps();
  const int64_t nblk = (g.Cg() + pl.cb - 1) / pl.cb;
  gemm_team(pl.nt, pl.items, [&](int t, int64_t it) {
    const ConvSlab<A> sl = conv_slab<A>(pl, ws, t);
    const int64_t nq = it / nblk, n = nq / g.G, q = nq % g.G;
    const int64_t c0 = it % nblk * pl.cb, nc_ = g.Cg() - c0 < pl.cb ? g.Cg() - c0 : pl.cb;
    const int64_t r0 = c0 * taps, rows = nc_ * taps;
    S *dx = igrad + (n * g.C + q * g.Cg() + c0) * HW;       // the item's channels
    // Fold target: the channels themselves, or a float block (float16).
    A *tgt = same ? reinterpret_cast<A *>(dx) : sl.plane;
    if (!same || !accumulate) std::memset(tgt, 0, nc_ * HW * sizeof(A));
    const S *dy = ograd + (n * g.F + q * Fg) * P;
    const S *wq = w + q * Fg * Kg;
    for (int64_t pb = 0; pb < P; pb += pl.chunk) {
      const int64_t pn = P - pb < pl.chunk ? P - pb : pl.chunk;
      A *C = sl.cbuf;
      Isa::template gemm<A>(
          rows, pn, Fg,
          [&](int64_t a0, int64_t k0, int64_t mc, int64_t kc, A *d) MX_INLINE {
            pack_lanes_contiguous<Isa::template Tile<A>::MR>(wq, Kg, r0 + a0, k0, mc, kc, d);
          },
          [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, A *d) MX_INLINE {
            pack_lanes_contiguous<Isa::template Tile<A>::NR>(dy, P, pb + j0, k0, nc, kc, d);
          },
          C, pn, false, sl.abuf, sl.bbuf, blk.MC, blk.KC, blk.NC);
      // col2im of the block: row rr adds into its channel's image rows.
      for (int64_t rr = 0; rr < rows; ++rr) {
        ColRow r = col_row(g, r0 + rr);
        r.c -= c0;
        const A *crow = C + rr * pn;
        for_row_pieces(g, pb, pn,
                       [&](int64_t od, int64_t oh, int64_t ow, int64_t n_, int64_t at) {
          A *irow = image_row(g, r, tgt, od, oh);
          if (!irow) return;
          const int64_t v0 = clamp64(r.lo, ow, ow + n_), v1 = clamp64(r.hi, v0, ow + n_);
          const A *src = crow + at - ow;
          if (g.sw == 1) {
            A *dst = irow + r.off;
            for (int64_t o = v0; o < v1; ++o) dst[o] += src[o];
          } else {
            for (int64_t o = v0; o < v1; ++o) irow[o * g.sw + r.off] += src[o];
          }
        });
      }
    }
    if (!same)
      for (int64_t i = 0; i < nc_ * HW; ++i)
        dx[i] = S((accumulate ? to_compute<A>(dx[i]) : A(0)) + tgt[i]);
  });
}

// ------------------------------------------------------------ weight grad
// wgrad (F x Kg) = (accumulate ? wgrad : 0) + sum_n out_grad[n] .
// unfold(img[n])^T, per group, as one GEMM per sample in one of two
// orientations (ConvPlan::f_major):
//   Kg-major: dW^T (Kg x Fg) = unfold(img[n]) . out_grad[n]^T, so that the
//     unfolded image is the GEMM's A (6-row panels, written in L1) and the
//     transposing packer only sees out_grad, Kg/Fg times smaller;
//   F-major: dW (Fg x Kg) = out_grad[n] . unfold(img[n])^T, the unfolded
//     image packed as B's NR-column panels, for filter counts that would
//     fill B's panels poorly.
// The products go to buffers in their layout (per sample chunk, or one for
// all) that are added into wgrad at the end; an F-major product over all
// samples has wgrad's layout and accumulates in wgrad itself.
template <class Isa, typename S, typename A>
static void conv_bwd_weight(const ConvGeom &g, const ConvPlan &pl, void *ws, const S *img,
                            const S *ograd, S *wgrad, bool accumulate) {
  constexpr int MR = Isa::template Tile<A>::MR, NR = Isa::template Tile<A>::NR;
  const GemmBlocks blk = pl.blk;
  const int64_t P = g.P(), Fg = g.Fg(), Kg = g.Kg(), wsz = g.F * Kg;
  A *shared = conv_shared<A>(pl, ws);
  if (g.N == 0) {
    if (!accumulate) std::memset(wgrad, 0, wsz * sizeof(S));
    return;
  }
  // One sample's product, columns [r0, r0 + nr) of group q's weight, into
  // Cq (the group's Fg x Kg block, ld Kg, when F-major; else its Kg x Fg
  // transpose, ld Fg).
  auto sample = [&](const ConvSlab<A> &sl, int64_t n, int64_t q, int64_t r0, int64_t nr, A *Cq,
                    bool acc) {
    const S *x = img + (n * g.C + q * g.Cg()) * g.plane();
    const S *dy = ograd + (n * g.F + q * Fg) * P;
    if constexpr (sizeof(S) == sizeof(A)) {
      if (pl.dot) {
        pad_image(g, reinterpret_cast<const A *>(x), sl.plane);
        Isa::template wgrad_dot<A>(
            wgrad_dot_args(g, reinterpret_cast<const A *>(dy),
                           reinterpret_cast<const A *>(ograd + g.N * g.F * P), sl.plane, Cq,
                           pl.f_major, acc),
            r0, nr);
        return;
      }
    }
    if (pl.f_major)
      Isa::template gemm<A>(
          Fg, nr, P,
          [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, A *d) MX_INLINE {
            pack_lanes_strided<MR>(dy, P, i0, k0, mc, kc, d);
          },
          [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, A *d) MX_INLINE {
            unfold_lanes<NR>(g, x, r0 + j0, nc, k0, kc, d);
          },
          Cq + r0, Kg, acc, sl.abuf, sl.bbuf, blk.MC, blk.KC, blk.NC);
    else
      Isa::template gemm<A>(
          nr, Fg, P,
          [&](int64_t a0, int64_t k0, int64_t mc, int64_t kc, A *d) MX_INLINE {
            unfold_lanes<MR>(g, x, r0 + a0, mc, k0, kc, d);
          },
          [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, A *d) MX_INLINE {
            pack_lanes_strided<NR>(dy, P, j0, k0, nc, kc, d);
          },
          Cq + r0 * Fg, Fg, acc, sl.abuf, sl.bbuf, blk.MC, blk.KC, blk.NC);
  };
  // wgrad = (accumulate ? wgrad : 0) + sum of `parts` buffers.
  auto finish = [&](int64_t parts) {
    team_for_cost(g.F, Kg * parts, [&](int64_t f0, int64_t f1) {
      for (int64_t f = f0; f < f1; ++f) {
        const int64_t q = f / Fg, fl = f % Fg;
        for (int64_t r = 0; r < Kg; ++r) {
          const int64_t at = pl.f_major ? f * Kg + r : q * Kg * Fg + r * Fg + fl;
          A s = accumulate ? to_compute<A>(wgrad[f * Kg + r]) : A(0);
          for (int64_t c = 0; c < parts; ++c) s += shared[c * wsz + at];
          wgrad[f * Kg + r] = S(s);
        }
      }
    });
  };
  if (pl.split_k) {
    // Item c sums samples [c*chunk, ...) into buffer c; buffers are added
    // in order, so the result does not depend on which thread ran what.
    gemm_team(pl.nt, pl.items, [&](int t, int64_t c) {
      const ConvSlab<A> sl = conv_slab<A>(pl, ws, t);
      A *part = shared + c * wsz;
      const int64_t n0 = c * pl.chunk, n1 = n0 + pl.chunk < g.N ? n0 + pl.chunk : g.N;
      for (int64_t q = 0; q < g.G; ++q)
        for (int64_t n = n0; n < n1; ++n) sample(sl, n, q, 0, Kg, part + q * Kg * Fg, n > n0);
    });
    finish(pl.items);
    return;
  }
  // Items are column blocks of the weight, each summing every sample;
  // F-major in the compute type, straight into wgrad.
  constexpr bool same = sizeof(S) == sizeof(A);
  const bool direct = pl.f_major && same;
  A *dst = direct ? reinterpret_cast<A *>(wgrad) : shared;
  const int64_t rblocks = (Kg + pl.wcols - 1) / pl.wcols;
  gemm_team(pl.nt, pl.items, [&](int t, int64_t it) {
    const ConvSlab<A> sl = conv_slab<A>(pl, ws, t);
    const int64_t q = it / rblocks, r0 = it % rblocks * pl.wcols;
    const int64_t nr = Kg - r0 < pl.wcols ? Kg - r0 : pl.wcols;
    for (int64_t n = 0; n < g.N; ++n)
      sample(sl, n, q, r0, nr, dst + q * Kg * Fg, n > 0 || (direct && accumulate));
  });
  if (!direct) finish(1);
}

// bgrad[f] (=, +=) sum over n and positions of ograd[n, f, :], in double
// (8 independent lanes, so the loop vectorizes); filters split over
// threads.
template <typename T>
static void bias_grad(int64_t N, int64_t F, int64_t P, const T *ograd, T *bgrad, bool add) {
  team_for_cost(F, N * P, [&](int64_t f0, int64_t f1) {
    for (int64_t f = f0; f < f1; ++f) {
      double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t n = 0; n < N; ++n) {
        const T *o = ograd + (n * F + f) * P;
        int64_t i = 0;
        for (; i + 8 <= P; i += 8)
          for (int j = 0; j < 8; ++j) lane[j] += double(o[i + j]);
        for (; i < P; ++i) lane[0] += double(o[i]);
      }
      const double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                       ((lane[4] + lane[5]) + (lane[6] + lane[7]));
      bgrad[f] = add ? T(double(bgrad[f]) + s) : T(s);
    }
  });
}

}  // namespace mxop
#endif  // MX_OPS_CONV_CPU_H_
