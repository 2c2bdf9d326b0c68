// One instruction set's copy of the direct convolution kernel that runs a
// stride-1 data grad (included by gemm_cpu.h next to gemm_isa.h, inside the
// same `#pragma GCC target` region and namespace).  No include guard on
// purpose.
//
// out[c][p] (=, +=) sum over rows r of wt[r][c] . U[r][p], U the unfolded
// padded image (stride 1 along W).  The packed GEMM would first copy U
// into panels, one element at a time; here a register tile of MF output
// channels x NV vectors of positions reads U's rows straight from the
// padded image, one unaligned vector load per row and vector, and the
// weight as broadcasts.  A vector past the end of an output row reads
// whatever follows (the image's slack); those lanes are never stored.

namespace mxop {
namespace MX_GEMM_NS {

template <typename A>
struct DirectTile {
  static constexpr int W = MX_GEMM_VBYTES / int(sizeof(A));   // lanes per vector
  // MF * NV accumulators, NV image vectors and a broadcast: 24 + 3 + 1 of
  // 32 registers (AVX-512), 8 + 2 + 1 of 16.
  static constexpr int MF = MX_GEMM_VBYTES == 64 ? 8 : 4;
  static constexpr int NV = MX_GEMM_VBYTES == 64 ? 3 : 2;
};

// One tile: channels [c0, c0 + mc) x the nv (<= NV) position vectors that
// start at out offset po[v] and padded-image offset xo[v], n[v] lanes valid.
template <typename A>
static inline void conv_direct_tile(const ConvDirect<A> &a, int64_t c0, int mc,
                                    const int64_t *po, const int64_t *xo, const int *n, int nv) {
  constexpr int W = DirectTile<A>::W, MF = DirectTile<A>::MF, NV = DirectTile<A>::NV;
  typedef A V __attribute__((vector_size(MX_GEMM_VBYTES)));
  typedef A VU __attribute__((vector_size(MX_GEMM_VBYTES), aligned(sizeof(A))));
  V s[MF][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MF; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[i][v] = V{};
  int64_t x[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) x[v] = xo[v < nv ? v : nv - 1];
  // Weight rows hold a.C values; channels past mc read the next row (or
  // the weight's slack), their sums unused.
  const A *w = a.wt + c0;
  const PaddedLanes &l = a.lanes;
  for (int64_t ch = 0; ch < a.Cin; ++ch)
    for (int64_t kz = 0; kz < l.kd; ++kz)
      for (int64_t ki = 0; ki < l.kh; ++ki) {
        const A *row = a.xp + ch * l.c_step + kz * l.kz_step + ki * l.ki_step;
        for (int64_t kj = 0; kj < l.kw; ++kj, w += a.C) {
          const A *b = row + kj * l.kj_step;
          V u[NV];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) u[v] = *reinterpret_cast<const VU *>(b + x[v]);
#pragma GCC unroll 8
          for (int i = 0; i < MF; ++i) {
            const A wi = w[i];        // scalar * vector: a broadcast, no add
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) s[i][v] += wi * u[v];
          }
        }
      }
  for (int i = 0; i < mc; ++i) {
    A *o = a.out + (c0 + i) * a.P;
    for (int v = 0; v < nv; ++v) {
      A *d = o + po[v];
      if (n[v] == W) {
        VU *p = reinterpret_cast<VU *>(d);
        *p = a.accumulate ? *p + s[i][v] : s[i][v];
      } else {
        for (int j = 0; j < n[v]; ++j) d[j] = a.accumulate ? d[j] + s[i][v][j] : s[i][v][j];
      }
    }
  }
}

// Output rows [row0, row1) (row = od * Ho + oh): their positions in
// groups of NV vectors, each group through every channel tile.
template <typename A>
static void conv_direct(const ConvDirect<A> &a, int64_t row0, int64_t row1) {
  constexpr int W = DirectTile<A>::W, MF = DirectTile<A>::MF, NV = DirectTile<A>::NV;
  int64_t po[NV], xo[NV];
  int n[NV], nv = 0;
  auto flush = [&]() {
    for (int64_t c = 0; c < a.C; c += MF)
      conv_direct_tile<A>(a, c, int(a.C - c < MF ? a.C - c : MF), po, xo, n, nv);
    nv = 0;
  };
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t od = row / a.Ho, oh = row % a.Ho;
    for (int64_t ow = 0; ow < a.Wo; ow += W) {
      po[nv] = row * a.Wo + ow;
      xo[nv] = od * a.step_d + oh * a.step_h + ow;
      n[nv] = int(a.Wo - ow < W ? a.Wo - ow : W);
      if (++nv == NV) flush();
    }
  }
  if (nv) flush();
}

}  // namespace MX_GEMM_NS
}  // namespace mxop
