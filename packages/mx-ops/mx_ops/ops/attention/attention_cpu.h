// MXNet's interleaved attention matmuls on the CPU (contrib/transformer.cc),
// on the NN kernels' GEMM core (../nn/gemm_cpu.h): one single-threaded GEMM
// per (batch, head) product, the products handed out over a team of threads
// with packing buffers from the call's workspace (TEMP_SPACE).  The
// projections are read and written in place in their interleaved layout:
// the packers walk the strided rows, nothing is transposed or copied.
//
// Why not the BLAS: scipy's OpenBLAS threads each GEMM itself; two engine
// workers running these products at once (a forward's qk and valatt, or a
// backward's) made them 5-10x slower on 2 shared cores (measured).
//
// Layouts: queries_keys_values (S, B, H*3*D) holds per head [q | k | v];
// keys_values (S, B, H*2*D) per head [k | v]; queries and outputs
// (S, B, H*D); attention maps (B*H, Sq, Sk).  q.k products are scaled by
// 1/sqrt(D) (applied to the packed q panels).  float32 and float64.
#ifndef MX_OPS_ATTENTION_CPU_H_
#define MX_OPS_ATTENTION_CPU_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "../nn/gemm_cpu.h"
#include "parallel.h"

namespace mxop {

struct AttentionParam {   // attention.py's _pack: "=i"
  int32_t heads;
};

// The sizes of one call: B*H products of (Sq x Sk x D).
struct AttDims {
  int64_t B, H, D, Sq, Sk;
  int64_t ldq, ldk, ldo;   // row strides: query projection, key/value projection, output
};

static inline AttDims att_selfatt(const MXOpCall *c, const MXTBlob &qkv) {
  AttDims d;
  d.H = static_cast<const AttentionParam *>(c->params)->heads;
  d.Sq = d.Sk = qkv.shape[0];
  d.B = qkv.shape[1];
  d.D = qkv.shape[2] / (3 * d.H);
  d.ldq = d.ldk = d.B * qkv.shape[2];
  d.ldo = d.B * d.H * d.D;
  return d;
}

static inline AttDims att_encdec(const MXOpCall *c, int64_t Sq, const MXTBlob &kv) {
  AttDims d;
  d.H = static_cast<const AttentionParam *>(c->params)->heads;
  d.Sq = Sq;
  d.Sk = kv.shape[0];
  d.B = kv.shape[1];
  d.D = kv.shape[2] / (2 * d.H);
  d.ldq = d.ldo = d.B * d.H * d.D;
  d.ldk = d.B * kv.shape[2];
  return d;
}

// A row-major operand of a product: element (i, k) of op(X) at
// p[i * ld + k] (plain) or p[k * ld + i] (transposed).
template <typename T>
struct AttOperand {
  const T *p;
  int64_t ld;
  bool trans;
};

// C (M x N, ldc) = or += alpha op(A) op(B), one thread, buffers `sl`.
template <class Isa, typename T>
static inline void att_gemm(const GemmBlocks &b, const GemmSlab<T> &sl, int64_t M, int64_t N,
                            int64_t K, T alpha, AttOperand<T> A, AttOperand<T> B, T *C,
                            int64_t ldc, bool add) {
  constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
  Isa::template gemm<T>(
      M, N, K,
      [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
        if (A.trans) pack_lanes_contiguous<MR>(A.p, A.ld, i0, k0, mc, kc, d);
        else pack_lanes_strided<MR>(A.p, A.ld, i0, k0, mc, kc, d);
        if (alpha != T(1)) {
          const int64_t n = (mc + MR - 1) / MR * MR * kc;
          for (int64_t i = 0; i < n; ++i) d[i] *= alpha;
        }
      },
      [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, T *d) MX_INLINE {
        if (B.trans) pack_lanes_strided<NR>(B.p, B.ld, j0, k0, nc, kc, d);
        else pack_lanes_contiguous<NR>(B.p, B.ld, j0, k0, nc, kc, d);
      },
      C, ldc, add, sl.abuf, sl.bbuf, b.MC, b.KC, b.NC);
}

// Zeroes n values in each of `rows` rows ld apart: a head's part of a
// gradient that the product does not reach (req 'write').
template <typename T>
static inline void att_zero_rows(T *p, int64_t rows, int64_t ld, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) std::memset(p + r * ld, 0, n * sizeof(T));
}

// Threads for B*H products of `flops` each, as the workspace allows.
template <class Isa, typename T>
static inline int att_threads(const MXOpCall *c, const GemmBlocks &b, int64_t items,
                              int64_t flops) {
  int nt = parallel_threads(items * flops, items);
  const int64_t slab = gemm_slab_bytes(b, sizeof(T));
  if (c->workspace_size < nt * slab) nt = int(c->workspace_size / slab);
  return nt;
}

static inline int att_short(MXOpCall *c, int64_t need) {
  static thread_local char msg[256];
  std::snprintf(msg, sizeof(msg),
                "interleaved_matmul: the workspace (TEMP_SPACE) holds %lld bytes, but one "
                "thread needs %lld", (long long)c->workspace_size, (long long)need);
  c->error = msg;
  return -1;
}

// Runs body(slab, bh) for the B*H products on a team.
template <class Isa, typename T, class F>
static inline int att_run(MXOpCall *c, const AttDims &d, int64_t flops, F body) {
  const GemmBlocks b = gemm_blocks<Isa, T>();
  const int64_t n = d.B * d.H;
  if (n == 0 || d.Sq == 0 || d.Sk == 0) return 0;
  const int nt = att_threads<Isa, T>(c, b, n, flops);
  if (nt < 1) return att_short(c, gemm_slab_bytes(b, sizeof(T)));
  gemm_team(nt, n, [&](int t, int64_t bh) { body(b, gemm_slab<T>(b, c->workspace, t), bh); });
  return 0;
}

// Offsets of product bh's head in the interleaved projections.
static inline int64_t att_head(const AttDims &d, int64_t bh, int64_t parts) {
  return (bh / d.H) * d.H * parts * d.D + (bh % d.H) * parts * d.D;
}

// --- selfatt_qk: out[bh] = q k^T / sqrt(D) ----------------------------------------
template <class Isa, typename T>
static int att_selfatt_qk(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const AttDims d = att_selfatt(c, c->inputs[0]);
  const T *X = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const T alpha = T(1.0 / std::sqrt(double(d.D)));
  const bool add = c->req[0] == MX_REQ_ADD;
  return att_run<Isa, T>(c, d, d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                      const GemmSlab<T> &sl, int64_t bh) {
    const T *q = X + att_head(d, bh, 3);
    att_gemm<Isa, T>(b, sl, d.Sq, d.Sk, d.D, alpha, {q, d.ldq, false}, {q + d.D, d.ldk, true},
                     out + bh * d.Sq * d.Sk, d.Sk, add);
  });
}

// inputs: ograd (B*H, S, S), queries_keys_values; output: its gradient
template <class Isa, typename T>
static int att_selfatt_qk_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const AttDims d = att_selfatt(c, c->inputs[1]);
  const T *G = static_cast<const T *>(c->inputs[0].dptr);
  const T *X = static_cast<const T *>(c->inputs[1].dptr);
  T *dX = static_cast<T *>(c->outputs[0].dptr);
  const T alpha = T(1.0 / std::sqrt(double(d.D)));
  const bool add = c->req[0] == MX_REQ_ADD;
  return att_run<Isa, T>(c, d, 2 * d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                          const GemmSlab<T> &sl, int64_t bh) {
    const int64_t off = att_head(d, bh, 3);
    const T *g = G + bh * d.Sq * d.Sk;
    // dq = g k / sqrt(D), dk = g^T q / sqrt(D), v gets none
    att_gemm<Isa, T>(b, sl, d.Sq, d.D, d.Sk, alpha, {g, d.Sk, false}, {X + off + d.D, d.ldk, false},
                     dX + off, d.ldq, add);
    att_gemm<Isa, T>(b, sl, d.Sk, d.D, d.Sq, alpha, {g, d.Sk, true}, {X + off, d.ldq, false},
                     dX + off + d.D, d.ldk, add);
    if (!add) att_zero_rows(dX + off + 2 * d.D, d.Sk, d.ldk, d.D);
  });
}

// --- selfatt_valatt: out[:, b, h] = attention[bh] v -------------------------------
template <class Isa, typename T>
static int att_selfatt_valatt(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const AttDims d = att_selfatt(c, c->inputs[0]);
  const T *X = static_cast<const T *>(c->inputs[0].dptr);
  const T *A = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  return att_run<Isa, T>(c, d, d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                      const GemmSlab<T> &sl, int64_t bh) {
    att_gemm<Isa, T>(b, sl, d.Sq, d.D, d.Sk, T(1), {A + bh * d.Sq * d.Sk, d.Sk, false},
                     {X + att_head(d, bh, 3) + 2 * d.D, d.ldk, false},
                     out + att_head(d, bh, 1), d.ldo, add);
  });
}

// inputs: ograd (S, B, H*D), queries_keys_values, attention; outputs: the
// gradients of the projections and of the attention maps
template <class Isa, typename T>
static int att_selfatt_valatt_backward(MXOpCall *c) {
  const AttDims d = att_selfatt(c, c->inputs[1]);
  const T *G = static_cast<const T *>(c->inputs[0].dptr);
  const T *X = static_cast<const T *>(c->inputs[1].dptr);
  const T *A = static_cast<const T *>(c->inputs[2].dptr);
  T *dX = static_cast<T *>(c->outputs[0].dptr);
  T *dA = static_cast<T *>(c->outputs[1].dptr);
  const int32_t r0 = c->req[0], r1 = c->req[1];
  return att_run<Isa, T>(c, d, 2 * d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                          const GemmSlab<T> &sl, int64_t bh) {
    const int64_t off = att_head(d, bh, 3);
    const T *g = G + att_head(d, bh, 1);
    if (r0 != MX_REQ_NULL) {       // dv = attention^T g; q and k get none
      att_gemm<Isa, T>(b, sl, d.Sk, d.D, d.Sq, T(1), {A + bh * d.Sq * d.Sk, d.Sk, true},
                       {g, d.ldo, false}, dX + off + 2 * d.D, d.ldk, r0 == MX_REQ_ADD);
      if (r0 != MX_REQ_ADD) att_zero_rows(dX + off, d.Sk, d.ldk, 2 * d.D);
    }
    if (r1 != MX_REQ_NULL)         // dattention = g v^T
      att_gemm<Isa, T>(b, sl, d.Sq, d.Sk, d.D, T(1), {g, d.ldo, false},
                       {X + off + 2 * d.D, d.ldk, true}, dA + bh * d.Sq * d.Sk, d.Sk,
                       r1 == MX_REQ_ADD);
  });
}

// --- encdec_qk: out[bh] = q k^T / sqrt(D) -----------------------------------------
template <class Isa, typename T>
static int att_encdec_qk(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const AttDims d = att_encdec(c, c->inputs[0].shape[0], c->inputs[1]);
  const T *Q = static_cast<const T *>(c->inputs[0].dptr);
  const T *KV = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const T alpha = T(1.0 / std::sqrt(double(d.D)));
  const bool add = c->req[0] == MX_REQ_ADD;
  return att_run<Isa, T>(c, d, d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                      const GemmSlab<T> &sl, int64_t bh) {
    att_gemm<Isa, T>(b, sl, d.Sq, d.Sk, d.D, alpha, {Q + att_head(d, bh, 1), d.ldq, false},
                     {KV + att_head(d, bh, 2), d.ldk, true}, out + bh * d.Sq * d.Sk, d.Sk,
                     add);
  });
}

// inputs: ograd (B*H, Sq, Sk), queries, keys_values; outputs: their gradients
template <class Isa, typename T>
static int att_encdec_qk_backward(MXOpCall *c) {
  const AttDims d = att_encdec(c, c->inputs[1].shape[0], c->inputs[2]);
  const T *G = static_cast<const T *>(c->inputs[0].dptr);
  const T *Q = static_cast<const T *>(c->inputs[1].dptr);
  const T *KV = static_cast<const T *>(c->inputs[2].dptr);
  T *dQ = static_cast<T *>(c->outputs[0].dptr);
  T *dKV = static_cast<T *>(c->outputs[1].dptr);
  const T alpha = T(1.0 / std::sqrt(double(d.D)));
  const int32_t r0 = c->req[0], r1 = c->req[1];
  return att_run<Isa, T>(c, d, 2 * d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                          const GemmSlab<T> &sl, int64_t bh) {
    const int64_t qo = att_head(d, bh, 1), ko = att_head(d, bh, 2);
    const T *g = G + bh * d.Sq * d.Sk;
    if (r0 != MX_REQ_NULL)         // dq = g k / sqrt(D)
      att_gemm<Isa, T>(b, sl, d.Sq, d.D, d.Sk, alpha, {g, d.Sk, false}, {KV + ko, d.ldk, false},
                       dQ + qo, d.ldq, r0 == MX_REQ_ADD);
    if (r1 != MX_REQ_NULL) {       // dk = g^T q / sqrt(D); v gets none
      att_gemm<Isa, T>(b, sl, d.Sk, d.D, d.Sq, alpha, {g, d.Sk, true}, {Q + qo, d.ldq, false},
                       dKV + ko, d.ldk, r1 == MX_REQ_ADD);
      if (r1 != MX_REQ_ADD) att_zero_rows(dKV + ko + d.D, d.Sk, d.ldk, d.D);
    }
  });
}

// --- encdec_valatt: out[:, b, h] = attention[bh] v --------------------------------
template <class Isa, typename T>
static int att_encdec_valatt(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const AttDims d = att_encdec(c, c->inputs[1].shape[1], c->inputs[0]);
  const T *KV = static_cast<const T *>(c->inputs[0].dptr);
  const T *A = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  return att_run<Isa, T>(c, d, d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                      const GemmSlab<T> &sl, int64_t bh) {
    att_gemm<Isa, T>(b, sl, d.Sq, d.D, d.Sk, T(1), {A + bh * d.Sq * d.Sk, d.Sk, false},
                     {KV + att_head(d, bh, 2) + d.D, d.ldk, false}, out + att_head(d, bh, 1),
                     d.ldo, add);
  });
}

// inputs: ograd (Sq, B, H*D), keys_values, attention; outputs: their gradients
template <class Isa, typename T>
static int att_encdec_valatt_backward(MXOpCall *c) {
  const AttDims d = att_encdec(c, c->inputs[2].shape[1], c->inputs[1]);
  const T *G = static_cast<const T *>(c->inputs[0].dptr);
  const T *KV = static_cast<const T *>(c->inputs[1].dptr);
  const T *A = static_cast<const T *>(c->inputs[2].dptr);
  T *dKV = static_cast<T *>(c->outputs[0].dptr);
  T *dA = static_cast<T *>(c->outputs[1].dptr);
  const int32_t r0 = c->req[0], r1 = c->req[1];
  return att_run<Isa, T>(c, d, 2 * d.Sq * d.Sk * d.D, [&](const GemmBlocks &b,
                                                          const GemmSlab<T> &sl, int64_t bh) {
    const int64_t ko = att_head(d, bh, 2);
    const T *g = G + att_head(d, bh, 1);
    if (r0 != MX_REQ_NULL) {       // dv = attention^T g; k gets none
      att_gemm<Isa, T>(b, sl, d.Sk, d.D, d.Sq, T(1), {A + bh * d.Sq * d.Sk, d.Sk, true},
                       {g, d.ldo, false}, dKV + ko + d.D, d.ldk, r0 == MX_REQ_ADD);
      if (r0 != MX_REQ_ADD) att_zero_rows(dKV + ko, d.Sk, d.ldk, d.D);
    }
    if (r1 != MX_REQ_NULL)         // dattention = g v^T
      att_gemm<Isa, T>(b, sl, d.Sq, d.Sk, d.D, T(1), {g, d.ldo, false},
                       {KV + ko + d.D, d.ldk, true}, dA + bh * d.Sq * d.Sk, d.Sk,
                       r1 == MX_REQ_ADD);
  });
}

// Bytes of workspace for `threads` threads, float32 or float64.
static inline int64_t att_workspace_bytes(int threads) {
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    const int64_t f = gemm_slab_bytes(gemm_blocks<Isa, float>(), 4);
    const int64_t d = gemm_slab_bytes(gemm_blocks<Isa, double>(), 8);
    return int64_t(threads) * (f > d ? f : d);
  });
}

#define MX_ATT_KERNEL(NAME)                                                             \
  static int NAME##_kernel(MXOpCall *c) {                                               \
    return with_gemm_isa([&](auto isa) {                                                \
      typedef decltype(isa) Isa;                                                        \
      switch (c->outputs[0].dtype) {                                                    \
        case MX_FLOAT32: return NAME<Isa, float>(c);                                    \
        case MX_FLOAT64: return NAME<Isa, double>(c);                                   \
        default:                                                                        \
          c->error = "interleaved_matmul: the CPU computes float32 and float64 only "   \
                     "(float16 runs on the GPU)";                                       \
          return -1;                                                                    \
      }                                                                                 \
    });                                                                                 \
  }

MX_ATT_KERNEL(att_selfatt_qk)
MX_ATT_KERNEL(att_selfatt_qk_backward)
MX_ATT_KERNEL(att_selfatt_valatt)
MX_ATT_KERNEL(att_selfatt_valatt_backward)
MX_ATT_KERNEL(att_encdec_qk)
MX_ATT_KERNEL(att_encdec_qk_backward)
MX_ATT_KERNEL(att_encdec_valatt)
MX_ATT_KERNEL(att_encdec_valatt_backward)
#undef MX_ATT_KERNEL

}  // namespace mxop
#endif  // MX_OPS_ATTENTION_CPU_H_
