// The NN kernels' own GEMM: a packed, register-blocked product
// (gemm_isa.h) compiled for three instruction sets and chosen at run time,
// with packers for plain and transposed operands.
//
// Why not the BLAS: scipy's OpenBLAS threads each GEMM itself and its
// threads wait on each other inside every call; on a machine whose cores
// are shared with other jobs that made a 2-thread GEMM up to 4x slower than
// a 1-thread one (measured on the 2-vCPU development VM), and there is no
// per-call way to keep one call single-threaded while another uses the
// pool.  With this core the operators split their work once over an
// OpenMP team, each thread running a single-threaded GEMM on its part with
// packing buffers from the operator's workspace (TEMP_SPACE).  It also lets
// a convolution unfold its image straight into the packed panels, and
// compute float16 in float32 by converting inside the packers.
//
// Instruction sets (isa.h): AVX-512 (F) and AVX2+FMA copies are compiled
// with `#pragma GCC target` and picked from CPUID; the generic copy uses
// 16-byte vectors (SSE2 on x86-64, NEON elsewhere).
#ifndef MX_OPS_GEMM_CPU_H_
#define MX_OPS_GEMM_CPU_H_

#include <atomic>
#include <type_traits>
#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "isa.h"
#include "parallel.h"
#include "team.h"

namespace mxop {
// Where row r = ((c * kd + kz) * kh + ki) * kw + kj of an unfolded image
// starts in the image's zero-padded copy (channels c_step elements apart).
struct PaddedLanes {
  int64_t kd, kh, kw, c_step, kz_step, ki_step, kj_step;
  int64_t operator()(int64_t r) const {
    const int64_t kj = r % kw, ki = r / kw % kh, kz = r / (kw * kh) % kd, c = r / (kw * kh * kd);
    return c * c_step + kz * kz_step + ki * ki_step + kj * kj_step;
  }
};

// The operands of the convolution weight grad's dot-product kernel
// (wgrad_dot_isa.h) for one sample and group: out_grad's F rows of P
// positions (its array ends at dy_end), and the padded image xp (with a
// vector's worth of slack past its end), in which output row (od, oh) is
// od * step_d + oh * step_h past a row's lane.  Results: dw[f * ldf + r * ldr].
template <typename A>
struct WgradDot {
  const A *dy, *dy_end, *xp;
  PaddedLanes lanes;
  int64_t F, P, Do, Ho, Wo, step_d, step_h;
  A *dw;
  int64_t ldf, ldr;
  bool accumulate;
};

// The operands of the direct convolution kernel (conv_direct_isa.h): the
// padded image xp of Cin channels (with slack), the weight as Cin * taps
// rows of C values (and MF values of slack), the output's C channels of P
// positions in rows of Wo, output row (od, oh) at od * step_d + oh * step_h
// past a row's lane.
template <typename A>
struct ConvDirect {
  const A *xp, *wt;
  PaddedLanes lanes;
  int64_t Cin, C, P, Ho, Wo, step_d, step_h;
  A *out;
  bool accumulate;
};
}  // namespace mxop

#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define MX_GEMM_NS isa_avx512
#define MX_GEMM_VBYTES 64
#include "gemm_isa.h"
#include "wgrad_dot_isa.h"
#include "conv_direct_isa.h"
#undef MX_GEMM_NS
#undef MX_GEMM_VBYTES
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define MX_GEMM_NS isa_avx2
#define MX_GEMM_VBYTES 32
#include "gemm_isa.h"
#include "wgrad_dot_isa.h"
#include "conv_direct_isa.h"
#undef MX_GEMM_NS
#undef MX_GEMM_VBYTES
#pragma GCC pop_options
#endif

#define MX_GEMM_NS isa_generic
#define MX_GEMM_VBYTES 16
#include "gemm_isa.h"
#include "wgrad_dot_isa.h"
#include "conv_direct_isa.h"
#undef MX_GEMM_NS
#undef MX_GEMM_VBYTES

namespace mxop {

// The tag type of one instruction set: a struct whose members name that
// set's copy of the GEMM (`Tile<A>`, `gemm`, `gemm_direct_a`) and of the
// convolution kernels (`Dot<A>`, `wgrad_dot`, `Direct<A>`, `conv_direct`).
#define MX_GEMM_ISA_TAG(NAME, NS)                                                          \
  struct NAME {                                                                            \
    template <typename A> using Tile = NS::Tile<A>;                                        \
    template <typename A, class PA, class PB>                                              \
    static void gemm(int64_t M, int64_t N, int64_t K, PA &&pa, PB &&pb, A *C, int64_t ldc, \
                     bool acc, A *abuf, A *bbuf, int64_t MC, int64_t KC, int64_t NC) {     \
      NS::gemm<A>(M, N, K, pa, pb, C, ldc, acc, abuf, bbuf, MC, KC, NC);                   \
    }                                                                                      \
    template <typename A, class PB>                                                        \
    static void gemm_direct_a(int64_t M, int64_t N, int64_t K, const A *a, int64_t lda,    \
                              PB &&pb, A *C, int64_t ldc, bool acc, A *bbuf, int64_t KC,   \
                              int64_t NC) {                                                \
      NS::gemm_direct_a<A>(M, N, K, a, lda, pb, C, ldc, acc, bbuf, KC, NC);                \
    }                                                                                      \
    template <typename A> using Dot = NS::DotTile<A>;                                      \
    template <typename A>                                                                  \
    static void wgrad_dot(const WgradDot<A> &a, int64_t r0, int64_t nr) {                  \
      NS::wgrad_dot<A>(a, r0, nr);                                                         \
    }                                                                                      \
    template <typename A> using Direct = NS::DirectTile<A>;                                \
    template <typename A>                                                                  \
    static void conv_direct(const ConvDirect<A> &a, int64_t row0, int64_t row1) {          \
      NS::conv_direct<A>(a, row0, row1);                                                   \
    }                                                                                      \
  };
MX_GEMM_ISA_TAG(GemmGeneric, isa_generic)
#if MX_MULTI_ISA
MX_GEMM_ISA_TAG(GemmAvx2, isa_avx2)
MX_GEMM_ISA_TAG(GemmAvx512, isa_avx512)
#endif
#undef MX_GEMM_ISA_TAG

// Runs f(tag) with the tag type of the instruction set in use.
template <class F>
static inline auto with_gemm_isa(F &&f) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return f(GemmAvx512());
    case ISA_AVX2: return f(GemmAvx2());
    default: break;
  }
#endif
  return f(GemmGeneric());
}

// Block sizes, in elements: A's block MC x KC sits in L2, one B panel
// KC x NR in L1 while the A panels pass it; NC bounds B's packed block
// (1 MiB for float, 512 KiB for double).  MC and NC are multiples of every
// instruction set's MR and NR.
struct GemmBlocks {
  int64_t MR, NR, MC, KC, NC;
};

// Bounds of every instruction set's blocks (packers size stack arrays by
// them).
constexpr int64_t kGemmMaxKC = 256, kGemmMaxNR = 64;

template <class Isa, typename A>
static inline GemmBlocks gemm_blocks() {
  typedef typename Isa::template Tile<A> TL;
  GemmBlocks b;
  b.MR = TL::MR;
  b.NR = TL::NR;
  b.MC = 96;
  b.KC = sizeof(A) == 4 ? 256 : 128;
  b.NC = sizeof(A) == 4 ? 1024 : 512;
  static_assert(TL::NR <= kGemmMaxNR, "NR above kGemmMaxNR");
  return b;
}

static inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Elements of one thread's packing buffers for blocks `b` (A's then B's,
// each a multiple of 16 elements so the second stays 64-byte aligned).
static inline int64_t gemm_pack_elems(const GemmBlocks &b) {
  return round_up(b.MC * b.KC, 16) + round_up(b.NC * b.KC, 16);
}

template <typename A, typename S>
static inline A to_compute(S v) { return A(v); }

// Packers are inlined into each instruction set's GEMM (they are called
// from its loops), so their copy loops use that set's vectors too.
#define MX_PACKER static inline __attribute__((always_inline))
// The same for the packer lambdas handed to gemm(): [&](...) MX_INLINE {...}
#define MX_INLINE __attribute__((always_inline))

// Packs lanes [l0, l0+nl) x k in [k0, k0+kc) of a source whose lane l, step
// k is src[(l) * ld + k] (lanes are rows: a row-major A, or a B stored
// transposed) into ceil(nl/R) panels of kc x R, zero-padding the last.
// A transpose: it walks 16 steps at a time so both the rows read and the
// panel lines written stay in L1.  Each row's read runs 128 bytes ahead:
// the hardware prefetcher does not follow R rows at once, and a source
// out of cache (an RNN's weights, packed once per call) otherwise waits on
// memory at every line (measured: 1024x256 floats from memory 500 us
// without, 234 us with).
template <int R, typename A, typename S>
MX_PACKER void pack_lanes_strided(const S *src, int64_t ld, int64_t l0, int64_t k0,
                                      int64_t nl, int64_t kc, A *dst) {
  for (int64_t lr = 0; lr < nl; lr += R, dst += R * kc) {
    const int n = int(nl - lr < R ? nl - lr : R);
    if (n < R) std::memset(dst, 0, R * kc * sizeof(A));     // the padding lanes
    for (int64_t kb = 0; kb < kc; kb += 16) {
      const int64_t ke = kb + 16 < kc ? kb + 16 : kc;
      for (int i = 0; i < n; ++i) {
        const S *s = src + (l0 + lr + i) * ld + k0;
        __builtin_prefetch(s + kb + 128 / sizeof(S));
        for (int64_t k = kb; k < ke; ++k) dst[k * R + i] = to_compute<A>(s[k]);
      }
    }
  }
}

// The same for a source whose lane l, step k is src[k * ld + l] (lanes are
// columns: a row-major B, or an A stored transposed): R contiguous values
// per step.
template <int R, typename A, typename S>
MX_PACKER void pack_lanes_contiguous(const S *src, int64_t ld, int64_t l0, int64_t k0,
                                         int64_t nl, int64_t kc, A *dst) {
  for (int64_t lr = 0; lr < nl; lr += R, dst += R * kc) {
    const int n = int(nl - lr < R ? nl - lr : R);
    for (int64_t k = 0; k < kc; ++k) {
      const S *s = src + (k0 + k) * ld + l0 + lr;
      A *d = dst + k * R;
      for (int j = 0; j < n; ++j) d[j] = to_compute<A>(s[j]);
      for (int j = n; j < R; ++j) d[j] = A(0);
    }
  }
}

// Runs body(t, item) for items [0, n) on a team of nt threads (t < nt
// names the thread's workspace slab), handing items out one at a time:
// on a machine shared with other jobs a thread may start late, and the
// others then take its items; the caller never waits for a worker that
// has not started (team.h).  Every item's result is independent of the
// thread that computes it.
template <typename B>
static inline void gemm_team(int nt, int64_t n, B body) {
  Team::get().run(nt, n, body);
}

// One thread's packing buffers in a workspace of `nt` slabs.
template <typename A>
struct GemmSlab {
  A *abuf, *bbuf;
};

static inline int64_t gemm_slab_bytes(const GemmBlocks &b, int64_t esz) {
  return round_up(gemm_pack_elems(b) * esz, 64);
}

template <typename A>
static inline GemmSlab<A> gemm_slab(const GemmBlocks &b, void *ws, int t) {
  GemmSlab<A> s;
  s.abuf = reinterpret_cast<A *>(static_cast<char *>(ws) + t * gemm_slab_bytes(b, sizeof(A)));
  s.bbuf = s.abuf + round_up(b.MC * b.KC, 16);
  return s;
}

// A plain GEMM split over a team: C (M x N, ldc) = or += A . B, with the
// packers of gemm(); items are row blocks when M >= N (each item packs all
// of B), else column blocks (each packs all of A), about four per thread,
// in multiples of MR / NR.  Threads: parallel.h's rule, at most nt_max.
struct GemmSplit {
  int nt;
  bool rows;
  int64_t block, items;
};

static inline GemmSplit gemm_split(const GemmBlocks &b, int64_t M, int64_t N, int64_t K,
                                   int nt_max) {
  GemmSplit s;
  s.rows = M >= N;
  const int64_t len = s.rows ? M : N, unit = s.rows ? b.MR : b.NR;
  const int64_t want = 4 * int64_t(nt_max);
  s.block = round_up((len + want - 1) / want, unit);
  if (s.block < unit) s.block = unit;
  s.items = len > 0 ? (len + s.block - 1) / s.block : 0;
  s.nt = parallel_threads(M * N * (K > 0 ? K : 1), s.items);
  if (s.nt > nt_max) s.nt = nt_max;
  return s;
}

template <class Isa, typename A, class PA, class PB>
static void gemm_parallel(const GemmSplit &sp, const GemmBlocks &b, void *ws, int64_t M,
                          int64_t N, int64_t K, PA &&pack_a, PB &&pack_b, A *C, int64_t ldc,
                          bool accumulate) {
  gemm_team(sp.nt, sp.items, [&](int t, int64_t it) {
    const GemmSlab<A> sl = gemm_slab<A>(b, ws, t);
    const int64_t o = it * sp.block, len = sp.rows ? M : N;
    const int64_t n = len - o < sp.block ? len - o : sp.block;
    if (sp.rows)
      Isa::template gemm<A>(
          n, N, K, [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, A *d) MX_INLINE {
            pack_a(o + i0, k0, mc, kc, d);
          }, pack_b, C + o * ldc, ldc, accumulate, sl.abuf, sl.bbuf, b.MC, b.KC, b.NC);
    else
      Isa::template gemm<A>(
          M, n, K, pack_a, [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, A *d) MX_INLINE {
            pack_b(k0, o + j0, kc, nc, d);
          }, C + o, ldc, accumulate, sl.abuf, sl.bbuf, b.MC, b.KC, b.NC);
  });
}

}  // namespace mxop
#endif  // MX_OPS_GEMM_CPU_H_
