// One instruction set's copy of the convolution weight grad's dot-product
// kernel (included by gemm_cpu.h next to gemm_isa.h, inside the same
// `#pragma GCC target` region and namespace).  No include guard on purpose.
//
// dW[f][r] = sum over positions p of dY[f][p] . U[r][p], U the unfolded
// image.  Both operands run along the positions, so a packed GEMM must
// transpose one of them (the unfolded image, element by element: that
// packing cost as much as the multiply-adds).  Here the positions are the
// vector lanes instead: on a zero-padded copy of the image (stride 1 along
// W), row r of U over one output row is a plain unaligned vector load, and
// a register tile of MF filters x MU rows keeps MF*MU vector sums that are
// reduced once, at the end.

namespace mxop {
namespace MX_GEMM_NS {

template <typename A>
struct DotTile {
  static constexpr int W = MX_GEMM_VBYTES / int(sizeof(A));   // lanes per vector
  // Accumulators plus the MF out_grad vectors and one image vector fit the
  // registers: 24 + 4 + 1 of 32 (AVX-512), 10 + 2 + 1 of 16.
  static constexpr int MF = MX_GEMM_VBYTES == 64 ? 4 : 2;
  static constexpr int MU = MX_GEMM_VBYTES == 64 ? 6 : 5;
};

// The first n (< W) values at p, the rest zero: a full load masked where
// the W values may be read (`safe`), else one value at a time.  Masking
// clears the bits, so whatever lies past the row (padding slack, the next
// row) becomes +0 and adds nothing, not even a NaN.
// (memcpy: an unaligned load GCC cannot fuse into an aligned masked move.)
template <typename V, typename VI, typename A>
static inline V dot_load_part(const A *p, int n, VI mask, bool safe) {
  if (safe) {
    VI v;
    std::memcpy(&v, p, sizeof(v));
    return reinterpret_cast<V>(v & mask);
  }
  V v = V{};
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
}

// One tile: a.dw[f * a.ldf + r * a.ldr] (=, +=) the dot products of
// filters [f0, f0 + mf) and unfolded rows [r0, r0 + mu) (mf <= MF,
// mu <= MU) over every output position.
template <typename A>
static inline void wgrad_dot_tile(const WgradDot<A> &a, int64_t f0, int mf, int64_t r0,
                                  int mu) {
  constexpr int W = DotTile<A>::W, MF = DotTile<A>::MF, MU = DotTile<A>::MU;
  typedef A V __attribute__((vector_size(MX_GEMM_VBYTES)));
  typedef A VU __attribute__((vector_size(MX_GEMM_VBYTES), aligned(sizeof(A))));
  typedef typename std::conditional<sizeof(A) == 4, int32_t, int64_t>::type I;
  typedef I VI __attribute__((vector_size(MX_GEMM_VBYTES)));
  const A *fy[MF], *ux[MU];
  // Rows past mf / mu repeat the last one; their sums are not written.
#pragma GCC unroll 8
  for (int i = 0; i < MF; ++i) fy[i] = a.dy + (f0 + (i < mf ? i : mf - 1)) * a.P;
#pragma GCC unroll 8
  for (int j = 0; j < MU; ++j) ux[j] = a.xp + a.lanes(r0 + (j < mu ? j : mu - 1));
  V s[MF][MU];
#pragma GCC unroll 8
  for (int i = 0; i < MF; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < MU; ++j) s[i][j] = V{};
  const int64_t full = a.Wo / W * W;
  const int tail = int(a.Wo - full);
  VI mask;
  for (int l = 0; l < W; ++l) mask[l] = l < tail ? I(-1) : I(0);
  for (int64_t od = 0; od < a.Do; ++od)
    for (int64_t oh = 0; oh < a.Ho; ++oh) {
      const int64_t po = (od * a.Ho + oh) * a.Wo, xo = od * a.step_d + oh * a.step_h;
      for (int64_t ow = 0; ow < full; ow += W) {
        V y[MF];
#pragma GCC unroll 8
        for (int i = 0; i < MF; ++i) y[i] = *reinterpret_cast<const VU *>(fy[i] + po + ow);
#pragma GCC unroll 8
        for (int j = 0; j < MU; ++j) {
          const V u = *reinterpret_cast<const VU *>(ux[j] + xo + ow);
#pragma GCC unroll 8
          for (int i = 0; i < MF; ++i) s[i][j] += y[i] * u;
        }
      }
      if (tail) {
        V y[MF];
#pragma GCC unroll 8
        for (int i = 0; i < MF; ++i)
          y[i] = dot_load_part<V, VI>(fy[i] + po + full, tail, mask,
                                          fy[i] + po + full + W <= a.dy_end);
#pragma GCC unroll 8
        for (int j = 0; j < MU; ++j) {
          const V u = dot_load_part<V, VI>(ux[j] + xo + full, tail, mask, true);
#pragma GCC unroll 8
          for (int i = 0; i < MF; ++i) s[i][j] += y[i] * u;
        }
      }
    }
  for (int i = 0; i < mf; ++i)
    for (int j = 0; j < mu; ++j) {
      A t = A(0);
      for (int l = 0; l < W; ++l) t += s[i][j][l];
      A &d = a.dw[(f0 + i) * a.ldf + (r0 + j) * a.ldr];
      d = a.accumulate ? d + t : t;
    }
}

// Every tile of filters [0, a.F) x rows [r0, r0 + nr).  The rows are the
// inner loop: a filter tile's out_grad rows stay in L2 while every image
// row passes them.
template <typename A>
static void wgrad_dot(const WgradDot<A> &a, int64_t r0, int64_t nr) {
  constexpr int MF = DotTile<A>::MF, MU = DotTile<A>::MU;
  for (int64_t f = 0; f < a.F; f += MF) {
    const int mf = int(a.F - f < MF ? a.F - f : MF);
    for (int64_t r = r0; r < r0 + nr; r += MU)
      wgrad_dot_tile<A>(a, f, mf, r, int(r0 + nr - r < MU ? r0 + nr - r : MU));
  }
}

}  // namespace MX_GEMM_NS
}  // namespace mxop
