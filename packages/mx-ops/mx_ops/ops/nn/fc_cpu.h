// FullyConnected on the CPU: out = data . weight^T + bias as one GEMM
// (gemm_cpu.h) split over the thread pool, and its backward as two GEMMs
// and a column sum.  The packing buffers are the call's workspace
// (TEMP_SPACE), sized by fc_workspace_bytes for the pool's max threads.
//
// The transposed weight is read by the GEMM's packer (no copy), and the
// bias is laid into each work item's block of the output just before the
// GEMM accumulates onto it, while that block is in cache: no separate
// pass over the output.  float32 and float64 (mx_ops.ops.nn.fully_connected
// rejects other dtypes at inference).
#ifndef MX_OPS_FC_CPU_H_
#define MX_OPS_FC_CPU_H_

#include <cstdint>
#include <cstdio>

#include "gemm_cpu.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.nn.fully_connected: data as (M, K) rows, weight (N, K).
struct FCParam {
  int32_t no_bias, pad_;
  int64_t M, K, N;
};

// The GEMMs of the forward op, or of the backward op (data grad
// M x K x N, weight grad N x K x M), as (M, N, K) triples.
static inline int fc_gemms(bool backward, const FCParam &p, int64_t (*mnk)[3]) {
  if (!backward) {
    mnk[0][0] = p.M; mnk[0][1] = p.N; mnk[0][2] = p.K;
    return 1;
  }
  mnk[0][0] = p.M; mnk[0][1] = p.K; mnk[0][2] = p.N;
  mnk[1][0] = p.N; mnk[1][1] = p.K; mnk[1][2] = p.M;
  return 2;
}

// Batches up to this many rows take the skinny forward: out^T = W . x^T
// with the weight read in place (gemm_direct_a).  With few rows each weight
// element meets only M multiply-adds, and packing the weight (a transposing
// copy of all of it, as the plain GEMM and OpenBLAS do) costs about as much
// as those.
constexpr int64_t kFcSkinnyRows = 256;

// The skinny forward's split: items are blocks of weight rows (output
// columns), each computing its out^T block into a buffer of the thread's
// slab (block x M), then adding it into out transposed, with the bias.
struct FcSkinny {
  int nt;
  int64_t block, items, ct;
};

static inline FcSkinny fc_skinny_split(const GemmBlocks &b, const FCParam &p, int nt_max) {
  FcSkinny s;
  const int64_t want = 4 * int64_t(nt_max);
  s.block = round_up((p.N + want - 1) / want, b.MR);
  const int64_t cap = round_up((int64_t(1) << 18) / (p.M > 0 ? p.M : 1), b.MR);
  if (s.block > cap) s.block = cap;
  if (s.block < b.MR) s.block = b.MR;
  s.items = (p.N + s.block - 1) / s.block;
  s.nt = parallel_threads(p.M * p.N * (p.K > 0 ? p.K : 1), s.items);
  if (s.nt > nt_max) s.nt = nt_max;
  s.ct = s.block * p.M;
  return s;
}

static inline int64_t fc_skinny_slab_bytes(const GemmBlocks &b, const FcSkinny &s,
                                           int64_t esz) {
  return round_up(b.KC * b.NC * esz, 64) + round_up(s.ct * esz, 64);
}

static inline bool fc_is_skinny(const FCParam &p) {
  return p.M <= kFcSkinnyRows && p.N >= p.M;
}

// Bytes of workspace a call needs on `threads` threads, for float32 or
// float64: the largest team's buffers over the op's GEMMs.
static inline int64_t fc_workspace_bytes(bool backward, const FCParam &p, int threads) {
  int64_t mnk[2][3];
  const int n = fc_gemms(backward, p, mnk);
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    const GemmBlocks bf = gemm_blocks<Isa, float>(), bd = gemm_blocks<Isa, double>();
    int64_t most = 0;
    auto keep = [&](int64_t v) { most = v > most ? v : most; };
    if (!backward && fc_is_skinny(p)) {
      const FcSkinny sf = fc_skinny_split(bf, p, threads);
      const FcSkinny sd = fc_skinny_split(bd, p, threads);
      keep(sf.nt * fc_skinny_slab_bytes(bf, sf, 4));
      keep(sd.nt * fc_skinny_slab_bytes(bd, sd, 8));
      return most;
    }
    for (int i = 0; i < n; ++i) {
      const GemmSplit sf = gemm_split(bf, mnk[i][0], mnk[i][1], mnk[i][2], threads);
      const GemmSplit sd = gemm_split(bd, mnk[i][0], mnk[i][1], mnk[i][2], threads);
      keep(sf.nt * gemm_slab_bytes(bf, 4));
      keep(sd.nt * gemm_slab_bytes(bd, 8));
    }
    return most;
  });
}

static inline int fc_short(MXOpCall *c, int64_t need) {
  static thread_local char msg[256];
  std::snprintf(msg, sizeof(msg),
                "the workspace (TEMP_SPACE) holds %lld bytes, but this call needs %lld bytes "
                "even on one thread", (long long)c->workspace_size, (long long)need);
  c->error = msg;
  return -1;
}

// The split of one GEMM for as many threads as the workspace holds.
template <typename T>
static int fc_fit(MXOpCall *c, const GemmBlocks &b, int64_t M, int64_t N, int64_t K,
                  GemmSplit *sp) {
  int nt = max_threads();
  for (;;) {
    *sp = gemm_split(b, M, N, K, nt);
    const int64_t need = sp->nt * gemm_slab_bytes(b, sizeof(T));
    if (c->workspace != nullptr && need <= c->workspace_size) return 0;
    if (sp->nt <= 1 || nt <= 1) return fc_short(c, need);
    nt = sp->nt - 1;
  }
}

template <typename T>
static int fc_fit_skinny(MXOpCall *c, const GemmBlocks &b, const FCParam &p, FcSkinny *sp) {
  int nt = max_threads();
  for (;;) {
    *sp = fc_skinny_split(b, p, nt);
    const int64_t need = sp->nt * fc_skinny_slab_bytes(b, *sp, sizeof(T));
    if (c->workspace != nullptr && need <= c->workspace_size) return 0;
    if (sp->nt <= 1 || nt <= 1) return fc_short(c, need);
    nt = sp->nt - 1;
  }
}

// out (M x N) = (add ? out : 0) + bias + x . W^T, computed as out^T blocks
// with W in place.
template <class Isa, typename T>
static int fc_fwd_skinny(MXOpCall *c, const FCParam &p, const T *x, const T *w, const T *bias,
                         T *out, bool add) {
  const GemmBlocks b = gemm_blocks<Isa, T>();
  FcSkinny sp;
  if (fc_fit_skinny<T>(c, b, p, &sp)) return -1;
  constexpr int NR = Isa::template Tile<T>::NR;
  const int64_t M = p.M, N = p.N, K = p.K;
  const int64_t slab = fc_skinny_slab_bytes(b, sp, sizeof(T));
  gemm_team(sp.nt, sp.items, [&](int t, int64_t it) {
    T *bbuf = reinterpret_cast<T *>(static_cast<char *>(c->workspace) + t * slab);
    T *ct = reinterpret_cast<T *>(reinterpret_cast<char *>(bbuf) +
                                  round_up(b.KC * b.NC * int64_t(sizeof(T)), 64));
    const int64_t n0 = it * sp.block, nb = N - n0 < sp.block ? N - n0 : sp.block;
    Isa::template gemm_direct_a<T>(
        nb, M, K, w + n0 * K, K,
        [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, T *d) MX_INLINE {
          pack_lanes_strided<NR>(x, K, j0, k0, nc, kc, d);           // x^T
        },
        ct, M, false, bbuf, b.KC, b.NC);
    for (int64_t m = 0; m < M; ++m) {
      T *row = out + m * N + n0;
      const T *col = ct + m;
      for (int64_t j = 0; j < nb; ++j) {
        const T v = col[j * M] + (bias ? bias[n0 + j] : T(0));
        row[j] = add ? row[j] + v : v;
      }
    }
  });
  return 0;
}

template <class Isa, typename T>
static int fc_fwd(MXOpCall *c) {
  const FCParam &p = *static_cast<const FCParam *>(c->params);
  const int32_t req = c->req[0];
  if (req == MX_REQ_NULL || p.M == 0 || p.N == 0) return 0;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  const T *w = static_cast<const T *>(c->inputs[1].dptr);
  const T *bias = p.no_bias ? nullptr : static_cast<const T *>(c->inputs[2].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = req == MX_REQ_ADD;
  if (fc_is_skinny(p)) return fc_fwd_skinny<Isa, T>(c, p, x, w, bias, out, add);
  const GemmBlocks b = gemm_blocks<Isa, T>();
  GemmSplit sp;
  if (fc_fit<T>(c, b, p.M, p.N, p.K, &sp)) return -1;
  constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
  const int64_t M = p.M, N = p.N, K = p.K;
  gemm_team(sp.nt, sp.items, [&](int t, int64_t it) {
    const GemmSlab<T> sl = gemm_slab<T>(b, c->workspace, t);
    const int64_t o = it * sp.block;
    const int64_t i0 = sp.rows ? o : 0, j0 = sp.rows ? 0 : o;
    const int64_t m = sp.rows ? (M - o < sp.block ? M - o : sp.block) : M;
    const int64_t n = sp.rows ? N : (N - o < sp.block ? N - o : sp.block);
    T *C = out + i0 * N + j0;
    if (bias) {                  // the item's block, just before the GEMM adds onto it
      for (int64_t i = 0; i < m; ++i) {
        T *row = C + i * N;
        if (add) for (int64_t j = 0; j < n; ++j) row[j] += bias[j0 + j];
        else for (int64_t j = 0; j < n; ++j) row[j] = bias[j0 + j];
      }
    }
    Isa::template gemm<T>(
        m, n, K,
        [&](int64_t a0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
          pack_lanes_strided<MR>(x, K, i0 + a0, k0, mc, kc, d);
        },
        [&](int64_t k0, int64_t b0, int64_t kc, int64_t nc, T *d) MX_INLINE {
          pack_lanes_strided<NR>(w, K, j0 + b0, k0, nc, kc, d);       // weight^T
        },
        C, N, add || bias != nullptr, sl.abuf, sl.bbuf, b.MC, b.KC, b.NC);
  });
  return 0;
}

// out[j] (=, +=) sum over rows of g (M x N), 64 columns at a time in
// double lanes.
template <typename T>
static void fc_column_sums(const T *g, T *out, int64_t M, int64_t N, bool add) {
  team_for_cost((N + 63) / 64, 64 * M, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * 64, n = N - j0 < 64 ? N - j0 : 64;
      double acc[64] = {0};
      for (int64_t i = 0; i < M; ++i) {
        const T *row = g + i * N + j0;
        for (int64_t j = 0; j < n; ++j) acc[j] += double(row[j]);
      }
      for (int64_t j = 0; j < n; ++j) out[j0 + j] = add ? T(double(out[j0 + j]) + acc[j]) : T(acc[j]);
    }
  });
}

// Inputs (out_grad, data, weight); outputs (data_grad, weight_grad
// [, bias_grad]): dX = dY . W, dW = dY^T . X, db = column sums of dY.
template <class Isa, typename T>
static int fc_bwd(MXOpCall *c) {
  const FCParam &p = *static_cast<const FCParam *>(c->params);
  const T *dy = static_cast<const T *>(c->inputs[0].dptr);
  const T *x = static_cast<const T *>(c->inputs[1].dptr);
  const T *w = static_cast<const T *>(c->inputs[2].dptr);
  const int64_t M = p.M, N = p.N, K = p.K;
  constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  GemmSplit sp;
  if (c->req[0] != MX_REQ_NULL && M > 0 && K > 0) {
    if (fc_fit<T>(c, b, M, K, N, &sp)) return -1;
    gemm_parallel<Isa, T>(
        sp, b, c->workspace, M, K, N,
        [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
          pack_lanes_strided<MR>(dy, N, i0, k0, mc, kc, d);
        },
        [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, T *d) MX_INLINE {
          pack_lanes_contiguous<NR>(w, K, j0, k0, nc, kc, d);
        },
        static_cast<T *>(c->outputs[0].dptr), K, c->req[0] == MX_REQ_ADD);
  }
  if (c->req[1] != MX_REQ_NULL && N > 0 && K > 0) {
    if (fc_fit<T>(c, b, N, K, M, &sp)) return -1;
    gemm_parallel<Isa, T>(
        sp, b, c->workspace, N, K, M,
        [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
          pack_lanes_contiguous<MR>(dy, N, i0, k0, mc, kc, d);     // dY^T
        },
        [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, T *d) MX_INLINE {
          pack_lanes_contiguous<NR>(x, K, j0, k0, nc, kc, d);
        },
        static_cast<T *>(c->outputs[1].dptr), K, c->req[1] == MX_REQ_ADD);
  }
  if (!p.no_bias && c->nout > 2 && c->req[2] != MX_REQ_NULL)
    fc_column_sums(dy, static_cast<T *>(c->outputs[2].dptr), M, N, c->req[2] == MX_REQ_ADD);
  return 0;
}

#define MX_FC_KERNEL(NAME, IMPL)                                                        \
  static int NAME(MXOpCall *c) {                                                        \
    return with_gemm_isa([&](auto isa) {                                                \
      typedef decltype(isa) Isa;                                                        \
      switch (c->inputs[0].dtype) {                                                     \
        case MX_FLOAT32: return IMPL<Isa, float>(c);                                    \
        case MX_FLOAT64: return IMPL<Isa, double>(c);                                   \
        default:                                                                        \
          c->error = "unsupported dtype (FullyConnected needs float32 or float64)";     \
          return -1;                                                                    \
      }                                                                                 \
    });                                                                                 \
  }

MX_FC_KERNEL(fc_forward, fc_fwd)
MX_FC_KERNEL(fc_backward, fc_bwd)
#undef MX_FC_KERNEL

}  // namespace mxop
#endif  // MX_OPS_FC_CPU_H_
