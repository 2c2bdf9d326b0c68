// The fused RNN's GEMMs on gemm_cpu.h's core: a plain row-major product
// with either operand transposed, and a product by a B operand packed once
// and read in place by every time step (the recurrent weights).
#ifndef MX_OPS_RNN_GEMM_H_
#define MX_OPS_RNN_GEMM_H_

#include <cstdint>
#include <cstring>

#include "rnn_layout.h"
#include "rnn_pack.h"

namespace mxop {

// The empty sum (K = 0): C (M x N, ldc) = 0 unless it accumulates.
template <typename T>
static inline void rnn_gemm_empty(int64_t M, int64_t N, T *C, int64_t ldc, bool acc) {
  if (!acc)
    for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(T));
}

// Rows r of C (ld ldc, n columns) = bias.
template <typename T>
static inline void rnn_fill_rows(T *C, int64_t rows, int64_t n, int64_t ldc, const T *bias) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(C + r * ldc, bias, n * sizeof(T));
}

// C (M x N, ldc) = or += op(A) op(B), op(A) M x K (ta: A stored K x M),
// op(B) K x N (tb: B stored N x K); row-major, gemm_cpu.h's split over the
// call's team (its slabs fit in the workspace's rnn_slab_bytes each).
template <class Isa, typename T>
struct RnnGemm {
  void *ws;
  int threads;
  void operator()(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, bool ta,
                  const T *B, int64_t ldb, bool tb, T *C, int64_t ldc, bool acc) const {
    if (M == 0 || N == 0) return;
    if (K == 0) return rnn_gemm_empty(M, N, C, ldc, acc);
    constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
    const GemmBlocks b = gemm_blocks<Isa, T>();
    const GemmSplit sp = gemm_split(b, M, N, K, threads);
    auto pa = [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
      if (ta) pack_lanes_contiguous<MR>(A, lda, i0, k0, mc, kc, d);
      else pack_lanes_strided<MR>(A, lda, i0, k0, mc, kc, d);
    };
    auto pb = [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, T *d) MX_INLINE {
      if (tb) pack_lanes_strided<NR>(B, ldb, j0, k0, nc, kc, d);
      else pack_lanes_contiguous<NR>(B, ldb, j0, k0, nc, kc, d);
    };
    gemm_parallel<Isa, T>(sp, b, ws, M, N, K, pa, pb, C, ldc, acc);
  }
};

// A B operand that every step multiplies by, packed once (gemm_isa.h's
// panels: per KC-row block of op(B), NR-column panels of all N columns), so
// the step GEMMs read it in place instead of repacking it each step.
template <typename T>
struct RnnPackedB {
  const T *buf;
  int64_t K, N, npad;     // npad: N padded to panels (one gate's H: rnn_prepack_gates)
};

// pack(l0, nl, offset) for the lanes [0, n) of one KC block as NR-lane
// panels of kc steps (offset: where lane l0's panel starts), the panels
// split over the team: a weight is packed once per call, and on one thread
// that cost as much as a tenth of the steps' GEMMs.
template <int NR, class F>
static void rnn_pack_split(int64_t n, int64_t kc, F &&pack) {
  team_for_cost((n + NR - 1) / NR, kc * NR, [&](int64_t p0, int64_t p1) {
    const int64_t l0 = p0 * NR, l1 = p1 * NR < n ? p1 * NR : n;
    pack(l0, l1 - l0, l0 * kc);
  });
}

template <class Isa, typename T>
static RnnPackedB<T> rnn_prepack(const T *B, int64_t ldb, bool tb, int64_t K, int64_t N,
                                 T *dst) {
  constexpr int NR = Isa::template Tile<T>::NR;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  const int64_t npad = round_up(N, NR);
  for (int64_t pc = 0; pc < K; pc += b.KC) {
    const int64_t kc = K - pc < b.KC ? K - pc : b.KC;
    rnn_pack_split<NR>(N, kc, [&](int64_t l0, int64_t nl, int64_t o) {
      if (tb) rnn_pack_strided<Isa>(B, ldb, l0, pc, nl, kc, dst + pc * npad + o);
      else pack_lanes_contiguous<NR>(B, ldb, l0, pc, nl, kc, dst + pc * npad + o);
    });
  }
  return RnnPackedB<T>{dst, K, N, npad};
}

// C (M x N, ldc) = or += A (M x K, row-major, lda) . B prepacked, B's
// panels read in place; with a bias (N), C = bias + A . B.  Tall products
// (the input projection of all steps: T*N rows) split into blocks of at
// most MC rows, each packing its rows of A once and writing its bias rows
// right before the product adds to them (still in cache: a separate pass
// over all T*N rows first went to memory and back); short ones (a step's
// N rows) into column blocks (whole panels, at most NC), each reading A's
// rows in place.
template <class Isa, typename T>
static void rnn_gemm_packed(void *ws, int threads, int64_t M, const T *A, int64_t lda,
                            const RnnPackedB<T> &B, T *C, int64_t ldc, bool acc,
                            const T *bias = nullptr) {
  const int64_t N = B.N, K = B.K;
  if (M == 0 || N == 0) return;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  const GemmSplit sp = gemm_split(b, M, N, K, threads);
  if (bias && (K == 0 || !sp.rows)) {
    rnn_fill_rows(C, M, N, ldc, bias);
    acc = true;
  }
  if (K == 0) return rnn_gemm_empty(M, N, C, ldc, acc);
  constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
  const int64_t slab = rnn_slab_bytes();
  // One KC x (columns [j0, j0+n)) block of B, in place.
  auto panels = [&](int64_t pc, int64_t kc, int64_t j0) {
    return const_cast<T *>(B.buf) + pc * B.npad + j0 * kc;
  };
  if (sp.rows) {
    const int64_t block = sp.block < b.MC ? sp.block : b.MC;
    const int64_t items = (M + block - 1) / block;
    gemm_team(sp.nt, items, [&](int t, int64_t it) {
      T *abuf = reinterpret_cast<T *>(static_cast<char *>(ws) + t * slab);
      const int64_t o = it * block, m = M - o < block ? M - o : block;
      if (bias) rnn_fill_rows(C + o * ldc, m, N, ldc, bias);
      for (int64_t pc = 0; pc < K; pc += b.KC) {
        const int64_t kc = K - pc < b.KC ? K - pc : b.KC;
        for (int64_t jc = 0; jc < N; jc += b.NC) {
          const int64_t nc = N - jc < b.NC ? N - jc : b.NC;
          Isa::template gemm<T>(
              m, nc, kc, [&](int64_t i0, int64_t k0, int64_t mc, int64_t kk, T *d) MX_INLINE {
                pack_lanes_strided<MR>(A, lda, o + i0, pc + k0, mc, kk, d);
              },
              [](int64_t, int64_t, int64_t, int64_t, T *) MX_INLINE {},     // packed already
              C + o * ldc + jc, ldc, acc || bias || pc > 0, abuf, panels(pc, kc, jc), b.MC,
              b.KC, b.NC);
        }
      }
    });
    return;
  }
  int nt = parallel_threads(M * N * K, (N + NR - 1) / NR);
  if (nt > threads) nt = threads;
  int64_t block = round_up((N + 2 * nt - 1) / (2 * nt), NR);
  if (block > b.NC) block = b.NC;
  const int64_t items = (N + block - 1) / block;
  gemm_team(nt, items, [&](int, int64_t it) {
    const int64_t o = it * block, n = N - o < block ? N - o : block;
    for (int64_t pc = 0; pc < K; pc += b.KC) {
      const int64_t kc = K - pc < b.KC ? K - pc : b.KC;
      Isa::template gemm_direct_a<T>(
          M, n, kc, A + pc, lda,
          [](int64_t, int64_t, int64_t, int64_t, T *) MX_INLINE {},     // packed already
          C + o, ldc, acc || pc > 0, panels(pc, kc, o), b.KC, b.NC);
    }
  });
}

// W_h2h^T (P x G*H; W_h2h stored (G*H, P)) packed for the forward's
// steps: per KC-row block, per gate, that gate's H columns as NR-column
// panels (each gate's panels start a panel, so a step's thread can take the
// same units of every gate).
template <class Isa, typename T>
static RnnPackedB<T> rnn_prepack_gates(const T *W, int64_t P, int64_t H, int G, T *dst) {
  constexpr int NR = Isa::template Tile<T>::NR;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  const int64_t hpad = round_up(H, NR);
  for (int64_t pc = 0; pc < P; pc += b.KC) {
    const int64_t kc = P - pc < b.KC ? P - pc : b.KC;
    for (int g = 0; g < G; ++g)
      rnn_pack_split<NR>(H, kc, [&](int64_t l0, int64_t nl, int64_t o) {
        T *gate = dst + pc * G * hpad + g * hpad * kc;
        rnn_pack_strided<Isa>(W, P, g * H + l0, pc, nl, kc, gate + o);
      });
  }
  return RnnPackedB<T>{dst, P, G * H, hpad};
}

// One forward step's recurrent side and nonlinearities in one pass of the
// team: S (N x G*H) = bias + h (N x P, ld ldh) . W_h2h^T (rnn_prepack_gates),
// or S += h . W_h2h^T without a bias (S holds the step's input side, and
// both biases but LSTM's, which its cell loop adds), then units(j0, j1) for
// the hidden units of the block.  Items are blocks of hidden units: each
// computes its columns of every gate (A read in place, no packing) and
// applies the nonlinearities to them at once, so a step costs one hand-out
// of work and no thread waits between the GEMM and the gates.
template <class Isa, typename T, class Units>
static void rnn_step_fused(int threads, int64_t N, int64_t H, int G, const T *h, int64_t ldh,
                           const RnnPackedB<T> &B, const T *bias, T *S, Units &&units) {
  constexpr int NR = Isa::template Tile<T>::NR;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  const int64_t P = B.K, GH = B.N, hpad = B.npad;
  int nt = parallel_threads(N * GH * (P > 0 ? P : 1), (H + NR - 1) / NR);
  if (nt > threads) nt = threads;
  // One block per thread: the caller takes the first item and a worker
  // the next, mostly the same at every step, so a thread reads the same
  // W_h2h columns step after step (its own L2's); two blocks per thread,
  // handed out in any order, measured 2-3% slower at 2 threads.
  int64_t block = round_up((H + nt - 1) / nt, NR);
  if (block > b.NC) block = b.NC;      // gemm_direct_a reads one NC block of B
  const int64_t items = H > 0 ? (H + block - 1) / block : 0;
  gemm_team(nt, items, [&](int, int64_t it) {
    const int64_t j0 = it * block, n = H - j0 < block ? H - j0 : block;
    for (int g = 0; g < G; ++g) {
      T *c = S + g * H + j0;
      if (bias)
        for (int64_t r = 0; r < N; ++r) std::memcpy(c + r * GH, bias + g * H + j0, n * sizeof(T));
      for (int64_t pc = 0; pc < P; pc += b.KC) {
        const int64_t kc = P - pc < b.KC ? P - pc : b.KC;
        Isa::template gemm_direct_a<T>(
            N, n, kc, h + pc, ldh,
            [](int64_t, int64_t, int64_t, int64_t, T *) MX_INLINE {},     // packed already
            c, GH, true, const_cast<T *>(B.buf) + pc * G * hpad + (g * hpad + j0) * kc, b.KC,
            b.NC);
      }
    }
    units(j0, j0 + n);
  });
}

// dst (=, +=) src over n elements (req), or nothing for 'null'.
template <typename T>
static inline void rnn_put(T *dst, const T *src, int64_t n, int32_t req) {
  if (req == MX_REQ_NULL || dst == src) return;
  if (req == MX_REQ_ADD) for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
  else std::memcpy(dst, src, n * sizeof(T));
}

}  // namespace mxop
#endif  // MX_OPS_RNN_GEMM_H_
