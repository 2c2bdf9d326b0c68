// One instruction set's copy of the packed GEMM core (see gemm_cpu.h,
// which includes this file once per instruction set inside a
// `#pragma GCC target` region, with MX_GEMM_NS naming the namespace and
// MX_GEMM_VBYTES the vector width in bytes).  No include guard on purpose.
//
// The blocking is GotoBLAS/BLIS's: C (M x N) += A (M x K) . B (K x N) in
// blocks of KC along K and MC x NC of C; a block of A is packed into
// MR-row panels (k-major, MR values per k) and a block of B into NR-column
// panels (NR values per k), so the micro-kernel streams both with unit
// stride and keeps an MR x NR tile of C in registers.  Callers hand in
// their own packers, which is how a convolution unfolds its image straight
// into B's panels (no column matrix) and how a transposed operand is read
// without a copy.  Panels are zero-padded to full MR / NR; only the valid
// part of a tile is written back.

namespace mxop {
namespace MX_GEMM_NS {

// Register tile per element type: MR rows of NV vectors.  MR = 6 and 4
// vectors of 512 bits (24 accumulators of the 32 registers) or 2 of 256 /
// 128 bits (12 of 16).
template <typename A>
struct Tile {
  static constexpr int W = MX_GEMM_VBYTES / int(sizeof(A));   // lanes per vector
  static constexpr int MR = 6;
  static constexpr int NV = MX_GEMM_VBYTES == 64 ? 4 : 2;
  static constexpr int NR = W * NV;
};

// C tile (ROWS x nr valid of ROWS x NR, row stride ldc) = (or +=) the
// product of ROWS rows of one A panel and one packed B panel (kc x NR).  A
// is packed (kc x MR, DIRECT false) or read in place (DIRECT: ROWS rows of
// stride lda).  ROWS is MR but for a block's last rows (tile_rows): a
// 32-row product (an RNN step's batch) is 5 tiles of 6 and one of 2, not
// 6 of 6 with 4 rows computed for nothing.
template <typename A, bool DIRECT, int ROWS>
static inline void micro_kernel(int64_t kc, const A *__restrict a, int64_t lda,
                                const A *__restrict b, A *__restrict c, int64_t ldc, int nr,
                                bool accumulate) {
  constexpr int W = Tile<A>::W, MR = Tile<A>::MR, NV = Tile<A>::NV, NR = Tile<A>::NR;
  typedef A V __attribute__((vector_size(MX_GEMM_VBYTES)));
  typedef A VU __attribute__((vector_size(MX_GEMM_VBYTES), aligned(sizeof(A))));
  V s[ROWS][NV];
  const A *row[ROWS];
#pragma GCC unroll 8
  for (int i = 0; i < ROWS; ++i) row[i] = a + (DIRECT ? i * lda : i);
#pragma GCC unroll 8
  for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[i][v] = V{};
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = *reinterpret_cast<const V *>(b + k * NR + v * W);
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i) {
      const A ai = DIRECT ? row[i][k] : row[i][k * MR];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) s[i][v] += ai * bv[v];
    }
  }
  if (nr == NR) {
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        VU *p = reinterpret_cast<VU *>(c + i * ldc + v * W);
        *p = accumulate ? *p + s[i][v] : s[i][v];
      }
    return;
  }
  alignas(64) A t[ROWS * NR];
  for (int i = 0; i < ROWS; ++i)
    for (int v = 0; v < NV; ++v) *reinterpret_cast<V *>(t + i * NR + v * W) = s[i][v];
  for (int i = 0; i < ROWS; ++i) {
    A *ci = c + i * ldc;
    const A *ti = t + i * NR;
    if (accumulate)
      for (int j = 0; j < nr; ++j) ci[j] += ti[j];
    else
      for (int j = 0; j < nr; ++j) ci[j] = ti[j];
  }
}

// One tile of mr (1..MR) rows: micro_kernel with ROWS = mr.
template <typename A, bool DIRECT>
static inline void tile_rows(int mr, int64_t kc, const A *a, int64_t lda, const A *b, A *c,
                             int64_t ldc, int nr, bool accumulate) {
  static_assert(Tile<A>::MR == 6, "tile_rows dispatches MR = 6");
  switch (mr) {
    case 6: return micro_kernel<A, DIRECT, 6>(kc, a, lda, b, c, ldc, nr, accumulate);
    case 5: return micro_kernel<A, DIRECT, 5>(kc, a, lda, b, c, ldc, nr, accumulate);
    case 4: return micro_kernel<A, DIRECT, 4>(kc, a, lda, b, c, ldc, nr, accumulate);
    case 3: return micro_kernel<A, DIRECT, 3>(kc, a, lda, b, c, ldc, nr, accumulate);
    case 2: return micro_kernel<A, DIRECT, 2>(kc, a, lda, b, c, ldc, nr, accumulate);
    default: return micro_kernel<A, DIRECT, 1>(kc, a, lda, b, c, ldc, nr, accumulate);
  }
}

// The rows of the next tile of an A read in place, `left` rows to go: MR,
// but MR + 2 rows as two tiles of MR / 2 + 1 (32 rows: 6 6 6 6 4 4, not
// ... 6 2): a 2-row tile loads as many B vectors as a 6-row one for a third
// of the multiply-adds, which made it 8% of an LSTM step's GEMM time for
// 1/16 of the rows.  Every element's sum is the same either way.
static inline int64_t direct_tile_rows(int64_t left) {
  constexpr int MR = Tile<float>::MR;
  return left == MR + 2 ? MR / 2 + 1 : (left < MR ? left : MR);
}

// C (M x N, row stride ldc) = or += A . B, single-threaded, on the caller's
// packing buffers: abuf holds MC x KC and bbuf KC x NC elements (each
// rounded up to whole panels), 64-byte aligned.
//   pack_a(i0, k0, mc, kc, dst): A's rows [i0, i0+mc) x columns [k0, k0+kc)
//                                as ceil(mc/MR) panels of kc x MR
//   pack_b(k0, j0, kc, nc, dst): B's rows [k0, k0+kc) x columns [j0, j0+nc)
//                                as ceil(nc/NR) panels of kc x NR
// With K == 0 a written C becomes zeros.
template <typename A, class PA, class PB>
static void gemm(int64_t M, int64_t N, int64_t K, PA &&pack_a, PB &&pack_b, A *C, int64_t ldc,
                 bool accumulate, A *abuf, A *bbuf, int64_t MC, int64_t KC, int64_t NC) {
  constexpr int MR = Tile<A>::MR, NR = Tile<A>::NR;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = A(0);
    return;
  }
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = N - jc < NC ? N - jc : NC;
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      const bool acc = accumulate || pc > 0;
      pack_b(pc, jc, kc, nc, bbuf);
      for (int64_t ic = 0; ic < M; ic += MC) {
        const int64_t mc = M - ic < MC ? M - ic : MC;
        pack_a(ic, pc, mc, kc, abuf);
        // The B panel stays in L1 while every A panel of the block (in
        // L2) passes it.
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int nr = int(nc - jr < NR ? nc - jr : NR);
          for (int64_t ir = 0; ir < mc; ir += MR)
            tile_rows<A, false>(int(mc - ir < MR ? mc - ir : MR), kc, abuf + ir * kc, 0,
                                bbuf + jr * kc, C + (ic + ir) * ldc + jc + jr, ldc, nr, acc);
        }
      }
    }
  }
}

// The same with A read in place (row-major, stride lda) instead of packed:
// for a skinny product whose A is big and used once (a FullyConnected
// weight times a small batch), packing A would cost as much as the
// multiply-adds.  Only B is packed (bbuf: KC x NC).
template <typename A, class PB>
static void gemm_direct_a(int64_t M, int64_t N, int64_t K, const A *a, int64_t lda,
                          PB &&pack_b, A *C, int64_t ldc, bool accumulate, A *bbuf, int64_t KC,
                          int64_t NC) {
  constexpr int MR = Tile<A>::MR, NR = Tile<A>::NR;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = A(0);
    return;
  }
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = N - jc < NC ? N - jc : NC;
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      pack_b(pc, jc, kc, nc, bbuf);
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int nr = int(nc - jr < NR ? nc - jr : NR);
        for (int64_t ir = 0, mr; ir < M; ir += mr) {
          mr = direct_tile_rows(M - ir);
          tile_rows<A, true>(int(mr), kc, a + ir * lda + pc, lda, bbuf + jr * kc,
                             C + ir * ldc + jc + jr, ldc, nr, accumulate || pc > 0);
        }
      }
    }
  }
}

}  // namespace MX_GEMM_NS
}  // namespace mxop
