// MXNet's interleaved attention matmuls on the CPU (contrib/transformer.cc):
// each is one batch of B*H strided products (or two, for a backward) on the
// GEMM core's batch entry (../dot/dot_cpu.h), which reads the heads of the
// interleaved projections in place: nothing is transposed or copied.
//
// Layouts: queries_keys_values (S, B, H*3*D) holds per head [q | k | v];
// keys_values (S, B, H*2*D) per head [k | v]; queries and outputs
// (S, B, H*D); attention maps (B*H, Sq, Sk).  Product bh = b*H + h.  The
// q.k products are scaled by 1/sqrt(D).  float32 and float64.
#ifndef MX_OPS_ATTENTION_CPU_H_
#define MX_OPS_ATTENTION_CPU_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../dot/dot_cpu.h"

namespace mxop {

struct AttentionParam {   // attention.py's _pack: "=i"
  int32_t heads;
};

struct AttDims {
  int64_t B, H, D, Sq, Sk;
  int64_t ldq, ldk, ldo;   // row strides: query projection, key/value projection, output
  size_t es;               // element size
};

// One operand of the B*H products: product bh's matrix starts at
// p + (b * outer + h * inner) elements, its stored rows ld apart.
struct AttMat {
  const char *p;
  int64_t ld, outer, inner;
};

// Head part `part` of a projection (S, B, H*parts*D) with row stride ld.
static inline AttMat att_head(const AttDims &d, const void *p, int64_t ld, int64_t parts,
                              int64_t part) {
  return {static_cast<const char *>(p) + part * d.D * d.es, ld, d.H * parts * d.D, parts * d.D};
}

// Product bh's (rows x cols) block of an array (B*H, rows, cols).
static inline AttMat att_maps(const AttDims &d, const void *p, int64_t rows, int64_t cols) {
  return {static_cast<const char *>(p), cols, d.H * rows * cols, rows * cols};
}

// out[bh] (M x N) = or += alpha op(a[bh]) op(b[bh]) under `req`.
static inline int att_product(MXOpCall *c, const AttDims &d, int64_t M, int64_t N, int64_t K,
                              double alpha, AttMat a, bool ta, AttMat b, bool tb, AttMat out,
                              int32_t req) {
  if (req == MX_REQ_NULL) return 0;
  GemmBatch g;
  g.batch = d.B * d.H;
  g.inner = d.H;
  g.M = M;
  g.N = N;
  g.K = K;
  g.ta = ta;
  g.tb = tb;
  g.alpha = alpha;
  g.A = a.p;
  g.B = b.p;
  g.C = const_cast<char *>(out.p);
  g.lda = a.ld;
  g.ldb = b.ld;
  g.ldc = out.ld;
  g.sa_outer = a.outer;
  g.sa_inner = a.inner;
  g.sb_outer = b.outer;
  g.sb_inner = b.inner;
  g.sc_outer = out.outer;
  g.sc_inner = out.inner;
  return gemm_batch(c, c->inputs[0].dtype, g, req == MX_REQ_ADD);
}

// Zeroes the heads' part `part` (of `parts`) in a projection's gradient:
// the part a product does not reach (req 'write').
static inline void att_zero_part(const AttDims &d, void *p, int64_t rows, int64_t ld,
                                 int64_t parts, int64_t part, int64_t width, int32_t req) {
  if (req != MX_REQ_WRITE && req != MX_REQ_INPLACE) return;
  char *base = static_cast<char *>(p) + part * d.D * d.es;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t bh = 0; bh < d.B * d.H; ++bh)
      std::memset(base + (r * ld + (bh / d.H) * d.H * parts * d.D + (bh % d.H) * parts * d.D) *
                             d.es, 0, width * d.es);
}

static inline int att_check(MXOpCall *c) {
  const int dt = c->inputs[0].dtype;
  if (dt == MX_FLOAT32 || dt == MX_FLOAT64) return 0;
  c->error = "interleaved_matmul: the CPU computes float32 and float64 only (float16 runs on "
             "the GPU)";
  return -1;
}

static inline AttDims att_selfatt(const MXOpCall *c, const MXTBlob &qkv) {
  AttDims d;
  d.H = static_cast<const AttentionParam *>(c->params)->heads;
  d.Sq = d.Sk = qkv.shape[0];
  d.B = qkv.shape[1];
  d.D = qkv.shape[2] / (3 * d.H);
  d.ldq = d.ldk = d.B * qkv.shape[2];
  d.ldo = d.B * d.H * d.D;
  d.es = qkv.dtype == MX_FLOAT64 ? 8 : 4;
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
  d.es = kv.dtype == MX_FLOAT64 ? 8 : 4;
  return d;
}

static inline double att_scale(const AttDims &d) { return 1.0 / std::sqrt(double(d.D)); }

// --- selfatt ---------------------------------------------------------------------
// out[bh] = q k^T / sqrt(D)
static int att_selfatt_qk_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_selfatt(c, c->inputs[0]);
  const void *X = c->inputs[0].dptr;
  return att_product(c, d, d.Sq, d.Sk, d.D, att_scale(d), att_head(d, X, d.ldq, 3, 0), false,
                     att_head(d, X, d.ldk, 3, 1), true,
                     att_maps(d, c->outputs[0].dptr, d.Sq, d.Sk), c->req[0]);
}

// (ograd, qkv) -> dqkv: dq = g k / sqrt(D), dk = g^T q / sqrt(D), dv = 0
static int att_selfatt_qk_backward_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_selfatt(c, c->inputs[1]);
  const void *G = c->inputs[0].dptr, *X = c->inputs[1].dptr;
  void *dX = c->outputs[0].dptr;
  const int32_t req = c->req[0];
  const AttMat g = att_maps(d, G, d.Sq, d.Sk);
  if (att_product(c, d, d.Sq, d.D, d.Sk, att_scale(d), g, false, att_head(d, X, d.ldk, 3, 1),
                  false, att_head(d, dX, d.ldq, 3, 0), req) ||
      att_product(c, d, d.Sk, d.D, d.Sq, att_scale(d), g, true, att_head(d, X, d.ldq, 3, 0),
                  false, att_head(d, dX, d.ldk, 3, 1), req))
    return -1;
  att_zero_part(d, dX, d.Sk, d.ldk, 3, 2, d.D, req);
  return 0;
}

// out[:, b, h] = attention[bh] v
static int att_selfatt_valatt_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_selfatt(c, c->inputs[0]);
  return att_product(c, d, d.Sq, d.D, d.Sk, 1.0, att_maps(d, c->inputs[1].dptr, d.Sq, d.Sk),
                     false, att_head(d, c->inputs[0].dptr, d.ldk, 3, 2), false,
                     att_head(d, c->outputs[0].dptr, d.ldo, 1, 0), c->req[0]);
}

// (ograd, qkv, attention) -> (dqkv, dattention): dv = attention^T g (dq, dk
// = 0), dattention = g v^T
static int att_selfatt_valatt_backward_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_selfatt(c, c->inputs[1]);
  const void *X = c->inputs[1].dptr;
  const AttMat g = att_head(d, c->inputs[0].dptr, d.ldo, 1, 0);
  if (att_product(c, d, d.Sk, d.D, d.Sq, 1.0, att_maps(d, c->inputs[2].dptr, d.Sq, d.Sk), true,
                  g, false, att_head(d, c->outputs[0].dptr, d.ldk, 3, 2), c->req[0]) ||
      att_product(c, d, d.Sq, d.Sk, d.D, 1.0, g, false, att_head(d, X, d.ldk, 3, 2), true,
                  att_maps(d, c->outputs[1].dptr, d.Sq, d.Sk), c->req[1]))
    return -1;
  att_zero_part(d, c->outputs[0].dptr, d.Sk, d.ldk, 3, 0, 2 * d.D, c->req[0]);
  return 0;
}

// --- encdec ----------------------------------------------------------------------
// out[bh] = q k^T / sqrt(D)
static int att_encdec_qk_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_encdec(c, c->inputs[0].shape[0], c->inputs[1]);
  return att_product(c, d, d.Sq, d.Sk, d.D, att_scale(d),
                     att_head(d, c->inputs[0].dptr, d.ldq, 1, 0), false,
                     att_head(d, c->inputs[1].dptr, d.ldk, 2, 0), true,
                     att_maps(d, c->outputs[0].dptr, d.Sq, d.Sk), c->req[0]);
}

// (ograd, queries, kv) -> (dqueries, dkv): dq = g k / sqrt(D),
// dk = g^T q / sqrt(D), dv = 0
static int att_encdec_qk_backward_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_encdec(c, c->inputs[1].shape[0], c->inputs[2]);
  const AttMat g = att_maps(d, c->inputs[0].dptr, d.Sq, d.Sk);
  if (att_product(c, d, d.Sq, d.D, d.Sk, att_scale(d), g, false,
                  att_head(d, c->inputs[2].dptr, d.ldk, 2, 0), false,
                  att_head(d, c->outputs[0].dptr, d.ldq, 1, 0), c->req[0]) ||
      att_product(c, d, d.Sk, d.D, d.Sq, att_scale(d), g, true,
                  att_head(d, c->inputs[1].dptr, d.ldq, 1, 0), false,
                  att_head(d, c->outputs[1].dptr, d.ldk, 2, 0), c->req[1]))
    return -1;
  att_zero_part(d, c->outputs[1].dptr, d.Sk, d.ldk, 2, 1, d.D, c->req[1]);
  return 0;
}

// out[:, b, h] = attention[bh] v
static int att_encdec_valatt_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_encdec(c, c->inputs[1].shape[1], c->inputs[0]);
  return att_product(c, d, d.Sq, d.D, d.Sk, 1.0, att_maps(d, c->inputs[1].dptr, d.Sq, d.Sk),
                     false, att_head(d, c->inputs[0].dptr, d.ldk, 2, 1), false,
                     att_head(d, c->outputs[0].dptr, d.ldo, 1, 0), c->req[0]);
}

// (ograd, kv, attention) -> (dkv, dattention): dv = attention^T g (dk = 0),
// dattention = g v^T
static int att_encdec_valatt_backward_kernel(MXOpCall *c) {
  if (att_check(c)) return -1;
  const AttDims d = att_encdec(c, c->inputs[2].shape[1], c->inputs[1]);
  const AttMat g = att_head(d, c->inputs[0].dptr, d.ldo, 1, 0);
  if (att_product(c, d, d.Sk, d.D, d.Sq, 1.0, att_maps(d, c->inputs[2].dptr, d.Sq, d.Sk), true,
                  g, false, att_head(d, c->outputs[0].dptr, d.ldk, 2, 1), c->req[0]) ||
      att_product(c, d, d.Sq, d.Sk, d.D, 1.0, g, false,
                  att_head(d, c->inputs[1].dptr, d.ldk, 2, 1), true,
                  att_maps(d, c->outputs[1].dptr, d.Sq, d.Sk), c->req[1]))
    return -1;
  att_zero_part(d, c->outputs[0].dptr, d.Sk, d.ldk, 2, 0, d.D, c->req[0]);
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ATTENTION_CPU_H_
