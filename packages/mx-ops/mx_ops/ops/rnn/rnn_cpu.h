// The fused RNN (MXNet 1.x's RNN operator: rnn_relu, rnn_tanh, lstm, gru;
// layers, directions, LSTM projection and state clipping, dropout between
// layers) on the CPU, forward and backward through time.
//
// Per layer and direction the input projections of all T steps are one
// GEMM (T*N rows) into the gate buffer; each step then adds the recurrent
// GEMM (N rows) and applies the gate nonlinearities in one pass.  The
// backward stores every step's gate gradients, so the weight and input
// gradients are again one GEMM each over all T steps; only dh . W_h2h runs
// per step.  All GEMMs are gemm_cpu.h's (split over an OpenMP team, packing
// buffers in the call's workspace).
//
// The forward keeps what the backward needs in the hidden 'reserve' output
// (rnn_layout): each layer's output Y, the dropout mask and the dropped
// next-layer input, and per layer and direction the activated gates and
// the cell states (LSTM), the pre-reset h2h n-gate term (GRU), or the
// pre-projection o*tanh(c) (LSTM with projection).
//
// Parameter vector (MXNet's, cuDNN's layout): for every layer, direction:
// W_i2h (G*H, in), W_h2h (G*H, P)[, W_h2r (P, H)]; then for every layer,
// direction: b_i2h (G*H), b_h2h (G*H).  Gates: LSTM i, f, g, o; GRU r, z, n
// with n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1-z) n + z h.
#ifndef MX_OPS_RNN_CPU_H_
#define MX_OPS_RNN_CPU_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../nn/gemm_cpu.h"
#include "nn_common.h"
#include "parallel.h"
#include "vexp.h"

namespace mxop {

enum RnnMode { kRnnRelu = 0, kRnnTanh = 1, kLstm = 2, kGru = 3 };

// Packed by mx_ops.ops.rnn.rnn; an MXRandomState follows (dropout).
struct RNNParam {
  int32_t mode, L, D, G;          // G: gates per unit (4 LSTM, 3 GRU, 1)
  int64_t T, N, I, H, P;          // P: projection size, or H
  int32_t proj, state_outputs, use_seq_len, clip;
  int32_t clip_nan, pad_;
  float pdrop, pad2_;
  double clip_min, clip_max;
};

// Element offsets in the parameter vector and in the reserve output.
struct RnnLayout {
  const RNNParam &p;
  explicit RnnLayout(const RNNParam &q) : p(q) {}
  int64_t in(int l) const { return l == 0 ? p.I : p.D * p.P; }
  int64_t gh() const { return p.G * p.H; }
  // Parameter vector.
  int64_t w_block(int l) const {
    return gh() * (in(l) + p.P) + (p.proj ? p.P * p.H : 0);
  }
  int64_t w_i(int l, int d) const {
    int64_t o = 0;
    for (int k = 0; k < l; ++k) o += p.D * w_block(k);
    return o + d * w_block(l);
  }
  int64_t w_h(int l, int d) const { return w_i(l, d) + gh() * in(l); }
  int64_t w_r(int l, int d) const { return w_h(l, d) + gh() * p.P; }
  int64_t b_i(int l, int d) const { return w_i(p.L, 0) + (int64_t(l) * p.D + d) * 2 * gh(); }
  int64_t b_h(int l, int d) const { return b_i(l, d) + gh(); }
  int64_t param_size() const { return w_i(p.L, 0) + int64_t(p.L) * p.D * 2 * gh(); }
  // Reserve: per layer Y (T*N, D*P)[, mask, X_next (T*N, D*P) with dropout],
  // then per layer and direction the gates (T*N, G*H) and the extra (T*N, H)
  // rows: cell states (LSTM) or hn (GRU), then o*tanh(c) (projection).
  int64_t rows() const { return p.T * p.N; }
  int64_t y_size() const { return rows() * p.D * p.P; }
  bool dropout(int l) const { return l > 0 && p.pdrop > 0.0f; }
  int64_t layer_block(int l) const { return y_size() * (dropout(l + 1) ? 3 : 1); }
  int64_t y(int l) const {
    int64_t o = 0;
    for (int k = 0; k < l; ++k) o += layer_block(k);
    return o;
  }
  int64_t mask(int l) const { return y(l) + y_size(); }      // dropout after layer l
  int64_t x_next(int l) const { return y(l) + 2 * y_size(); }
  int64_t extras() const {
    return (p.mode == kLstm || p.mode == kGru ? 1 : 0) + (p.proj ? 1 : 0);
  }
  int64_t ld_block() const { return rows() * (gh() + extras() * p.H); }
  int64_t gates(int l, int d) const { return y(p.L) + (int64_t(l) * p.D + d) * ld_block(); }
  int64_t extra(int l, int d, int k) const { return gates(l, d) + rows() * (gh() + k * p.H); }
  int64_t reserve_size() const { return gates(p.L, 0); }
};

// Workspace: GEMM packing slabs for `threads` threads, then the scratch
// (sized for double).
static inline int64_t rnn_slab_bytes() {
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    const int64_t f = gemm_slab_bytes(gemm_blocks<Isa, float>(), 4);
    const int64_t d = gemm_slab_bytes(gemm_blocks<Isa, double>(), 8);
    return f > d ? f : d;
  });
}

// Elements of W_h2h packed once for all steps (rnn_prepack): W_h2h^T
// (P x G*H) in the forward, W_h2h (G*H x P) in the backward.
static inline int64_t rnn_prepacked_elems(const RNNParam &p) {
  const int64_t gh = p.G * p.H, f = round_up(gh, kGemmMaxNR) * p.P;
  const int64_t b = round_up(p.P, kGemmMaxNR) * gh;
  return round_up(f > b ? f : b, 16);
}

// Scratch elements: the prepacked W_h2h, then forward: the step's recurrent
// GEMM (N, G*H) and tanh(c) (N, H); backward: two dY buffers, the gate
// gradients of all steps (input and recurrent side), dh of all steps
// (projection), dh, dc, dR.
static inline int64_t rnn_scratch_elems(const RNNParam &p, bool backward) {
  const RnnLayout lo(p);
  const int64_t nf = rnn_prepacked_elems(p) + p.N * lo.gh() + p.N * p.H + p.N;  // + lengths
  if (!backward) return nf;
  return 2 * lo.y_size() + 2 * lo.rows() * lo.gh() + lo.rows() * p.P + 2 * p.N * p.P +
         2 * p.N * p.H + p.N * p.H + nf;
}

static inline int64_t rnn_workspace_bytes(const RNNParam &p, bool backward, int threads) {
  return threads * rnn_slab_bytes() + round_up(rnn_scratch_elems(p, backward) * 8, 64) + 64;
}

// C (M x N, ldc) = or += op(A) op(B), op(A) M x K (ta: A stored K x M),
// op(B) K x N (tb: B stored N x K); row-major, on the call's team.
template <class Isa, typename T>
struct RnnGemm {
  void *ws;
  int threads;
  void operator()(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, bool ta,
                  const T *B, int64_t ldb, bool tb, T *C, int64_t ldc, bool acc) const {
    if (M == 0 || N == 0) return;
    if (K == 0) {
      if (!acc)
        for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(T));
      return;
    }
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
    const int64_t slab = rnn_slab_bytes();
    gemm_team(sp.nt, sp.items, [&](int t, int64_t it) {
      T *abuf = reinterpret_cast<T *>(static_cast<char *>(ws) + t * slab);
      T *bbuf = abuf + round_up(b.MC * b.KC, 16);
      const int64_t o = it * sp.block, len = sp.rows ? M : N;
      const int64_t n = len - o < sp.block ? len - o : sp.block;
      if (sp.rows)
        Isa::template gemm<T>(
            n, N, K, [&](int64_t i0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
              pa(o + i0, k0, mc, kc, d);
            }, pb, C + o * ldc, ldc, acc, abuf, bbuf, b.MC, b.KC, b.NC);
      else
        Isa::template gemm<T>(
            M, n, K, pa, [&](int64_t k0, int64_t j0, int64_t kc, int64_t nc, T *d) MX_INLINE {
              pb(k0, o + j0, kc, nc, d);
            }, C + o, ldc, acc, abuf, bbuf, b.MC, b.KC, b.NC);
    });
  }
};

// A B operand that every step multiplies by, packed once (gemm_isa.h's
// panels: per KC-row block of op(B), NR-column panels of all N columns), so
// the step GEMMs read it in place instead of repacking it each step.
template <typename T>
struct RnnPackedB {
  const T *buf;
  int64_t K, N, npad;
};

template <class Isa, typename T>
static RnnPackedB<T> rnn_prepack(const T *B, int64_t ldb, bool tb, int64_t K, int64_t N,
                                 T *dst) {
  constexpr int NR = Isa::template Tile<T>::NR;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  const int64_t npad = round_up(N, NR);
  for (int64_t pc = 0; pc < K; pc += b.KC) {
    const int64_t kc = K - pc < b.KC ? K - pc : b.KC;
    if (tb) pack_lanes_strided<NR>(B, ldb, 0, pc, N, kc, dst + pc * npad);
    else pack_lanes_contiguous<NR>(B, ldb, 0, pc, N, kc, dst + pc * npad);
  }
  return RnnPackedB<T>{dst, K, N, npad};
}

// C (M x N, ldc) = or += A (M x K, row-major, lda) . B prepacked: items
// are column blocks (whole panels, at most NC), each running the GEMM core
// once per KC block on its panels in place.
template <class Isa, typename T>
static void rnn_gemm_packed(void *ws, int threads, int64_t M, const T *A, int64_t lda,
                            const RnnPackedB<T> &B, T *C, int64_t ldc, bool acc) {
  const int64_t N = B.N, K = B.K;
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!acc)
      for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(T));
    return;
  }
  constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
  const GemmBlocks b = gemm_blocks<Isa, T>();
  int nt = parallel_threads(M * N * K, (N + NR - 1) / NR);
  if (nt > threads) nt = threads;
  const int64_t slab = rnn_slab_bytes();
  int64_t block = round_up((N + 2 * nt - 1) / (2 * nt), NR);
  if (block > b.NC) block = b.NC;
  const int64_t items = (N + block - 1) / block;
  gemm_team(nt, items, [&](int t, int64_t it) {
    T *abuf = reinterpret_cast<T *>(static_cast<char *>(ws) + t * slab);
    const int64_t o = it * block, n = N - o < block ? N - o : block;
    for (int64_t pc = 0; pc < K; pc += b.KC) {
      const int64_t kc = K - pc < b.KC ? K - pc : b.KC;
      Isa::template gemm<T>(
          M, n, kc, [&](int64_t i0, int64_t k0, int64_t mc, int64_t kk, T *d) MX_INLINE {
            pack_lanes_strided<MR>(A, lda, i0, pc + k0, mc, kk, d);
          },
          [](int64_t, int64_t, int64_t, int64_t, T *) MX_INLINE {},     // packed already
          C + o, ldc, acc || pc > 0, abuf, const_cast<T *>(B.buf) + pc * B.npad + o * kc,
          b.MC, b.KC, b.NC);
    }
  });
}

// Rows r of C (ld ldc, n columns) = bias.
template <typename T>
static inline void rnn_fill_rows(T *C, int64_t rows, int64_t n, int64_t ldc, const T *bias) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(C + r * ldc, bias, n * sizeof(T));
}

// dst (=, +=) src over n elements (req), or nothing for 'null'.
template <typename T>
static inline void rnn_put(T *dst, const T *src, int64_t n, int32_t req) {
  if (req == MX_REQ_NULL || dst == src) return;
  if (req == MX_REQ_ADD) for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
  else std::memcpy(dst, src, n * sizeof(T));
}

template <typename T>
static inline T rnn_clip(const RNNParam &p, T c) {
  if (!p.clip) return c;
  if (std::isnan(c)) return p.clip_nan ? T(p.clip_min) : c;
  return c < T(p.clip_min) ? T(p.clip_min) : (c > T(p.clip_max) ? T(p.clip_max) : c);
}

// The time step processed s-th by direction d.
static inline int64_t rnn_step(const RNNParam &p, int d, int64_t s) {
  return d == 0 ? s : p.T - 1 - s;
}

template <typename T>
struct RnnIo {           // the call's arrays
  const T *x, *w, *hx, *cx;
  T *reserve;
};

// Per batch row the number of valid steps, from the sequence_length input
// (any dtype, clamped to [0, T]); nullptr without use_sequence_length.
// Steps t >= length are padding (cuDNN's padded layout): the state passes
// through them unchanged ("carried" in Y, so a reverse direction starts
// from the initial state at its last valid step), their outputs are zero
// and they take no gradient.
static int64_t *rnn_lengths(const RNNParam &p, const MXTBlob *b, int64_t *lens) {
  if (!p.use_seq_len) return nullptr;
  for (int64_t n = 0; n < p.N; ++n) {
    double v;
    switch (b->dtype) {
      case MX_FLOAT32: v = static_cast<const float *>(b->dptr)[n]; break;
      case MX_FLOAT64: v = static_cast<const double *>(b->dptr)[n]; break;
      case MX_INT32: v = static_cast<const int32_t *>(b->dptr)[n]; break;
      case MX_INT64: v = double(static_cast<const int64_t *>(b->dptr)[n]); break;
      case MX_UINT8: v = static_cast<const uint8_t *>(b->dptr)[n]; break;
      case MX_INT8: v = static_cast<const int8_t *>(b->dptr)[n]; break;
      default: v = double(p.T); break;
    }
    lens[n] = !(v > 0) ? 0 : (v >= double(p.T) ? p.T : int64_t(v));
  }
  return lens;
}

static inline bool rnn_padded(const int64_t *lens, int64_t n, int64_t t) {
  return lens != nullptr && t >= lens[n];
}

// Padded rows of step t: h carried from hp into hout.
template <typename T>
static void rnn_carry(const RNNParam &p, const int64_t *lens, int64_t t, const T *hp,
                      int64_t ldhp, T *hout, int64_t ldh) {
  for (int64_t n = 0; n < p.N; ++n)
    if (rnn_padded(lens, n, t)) std::memcpy(hout + n * ldh, hp + n * ldhp, p.P * sizeof(T));
}

// One step's nonlinearities for rows [0, N): a = the gates' pre-activation
// input side (T*N layout row block of step t), s = the recurrent side;
// writes the activated gates over a, the new c / hn / o*tanh(c) extras and
// h into hout (ld ldh).
template <typename T>
static void rnn_gates_fwd(const RNNParam &p, T *a, const T *s, const T *cprev, int64_t ldcp,
                          T *cnew, T *hn, T *rbuf, T *hout, int64_t ldh, T *tmp,
                          const int64_t *lens, int64_t t) {
  const int64_t H = p.H, G = p.G * H;
  team_for_cost(p.N, 8 * G, [&](int64_t n0, int64_t n1) {     // rows are independent
    for (int64_t n = n0; n < n1; ++n) {
      T *an = a + n * G;
      const T *sn = s + n * G;
      T *h = p.proj ? rbuf + n * H : hout + n * ldh;
      T *tmpn = tmp + n * H;
      if (rnn_padded(lens, n, t)) {      // gates 0, c carried (h: rnn_carry)
        std::memset(an, 0, G * sizeof(T));
        if (p.mode == kLstm) std::memcpy(cnew + n * H, cprev + n * ldcp, H * sizeof(T));
        if (hn) std::memset(hn + n * H, 0, H * sizeof(T));
        if (p.proj) std::memset(h, 0, H * sizeof(T));
        continue;
      }
      if (p.mode == kLstm) {
        for (int64_t j = 0; j < G; ++j) an[j] += sn[j];
        vsigmoid(an, an, 2 * H);
        vtanh(an + 2 * H, an + 2 * H, H);
        vsigmoid(an + 3 * H, an + 3 * H, H);
        const T *cp = cprev + n * ldcp;
        T *c = cnew + n * H;
        for (int64_t j = 0; j < H; ++j)
          c[j] = rnn_clip(p, an[H + j] * cp[j] + an[j] * an[2 * H + j]);
        vtanh(c, tmpn, H);
        for (int64_t j = 0; j < H; ++j) h[j] = an[3 * H + j] * tmpn[j];
      } else if (p.mode == kGru) {
        for (int64_t j = 0; j < 2 * H; ++j) an[j] += sn[j];
        vsigmoid(an, an, 2 * H);
        T *hnn = hn + n * H;
        for (int64_t j = 0; j < H; ++j) {
          hnn[j] = sn[2 * H + j];
          an[2 * H + j] += an[j] * hnn[j];
        }
        vtanh(an + 2 * H, an + 2 * H, H);
        const T *hp = cprev + n * ldcp;      // GRU: cprev is h_{t-1}
        for (int64_t j = 0; j < H; ++j)
          h[j] = (T(1) - an[H + j]) * an[2 * H + j] + an[H + j] * hp[j];
      } else {
        for (int64_t j = 0; j < H; ++j) an[j] += sn[j];
        if (p.mode == kRnnTanh) vtanh(an, an, H);
        else for (int64_t j = 0; j < H; ++j) an[j] = an[j] > T(0) ? an[j] : T(0);
        for (int64_t j = 0; j < H; ++j) h[j] = an[j];
      }
    }
  });
}

// Dropout between layers l and l+1: mask (1/(1-p) or 0, ones outside
// training) and the dropped copy of Y_l.
template <typename T>
static void rnn_dropout(const RNNParam &p, MXOpCall *c, UniformFill fill, const T *y, T *mask,
                        T *xn, int64_t n, uint64_t start) {
  const float pkeep = 1.0f - p.pdrop;
  const T keep = T(pkeep > 0.0f ? 1.0f / pkeep : 0.0f);
  if (!c->is_train) {
    for (int64_t i = 0; i < n; ++i) mask[i] = T(1);
    std::memcpy(xn, y, n * sizeof(T));
    return;
  }
  const MXRandomState s = mx_random_state(c->params, sizeof(RNNParam));
  float u[kUniformChunk];
  for (int64_t b = 0; b < n; b += kUniformChunk) {
    const int64_t len = n - b < kUniformChunk ? n - b : kUniformChunk;
    fill(s.seed, s.offset, start + uint64_t(b), u, size_t(len), 0.0f, 1.0f);
    for (int64_t j = 0; j < len; ++j) {
      mask[b + j] = u[j] < pkeep ? keep : T(0);
      xn[b + j] = y[b + j] * mask[b + j];
    }
  }
}

// out's padded rows: 0 (write), or back to their value before the add.
template <typename T>
static void rnn_zero_padded(const RNNParam &p, const int64_t *lens, const T *y, T *out,
                            bool add) {
  const int64_t DP = p.D * p.P;
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t n = 0; n < p.N; ++n) {
      if (!rnn_padded(lens, n, t)) continue;
      T *o = out + (t * p.N + n) * DP;
      const T *yr = y + (t * p.N + n) * DP;
      for (int64_t j = 0; j < DP; ++j) o[j] = add ? o[j] - yr[j] : T(0);
    }
}

template <class Isa, typename T>
static int rnn_fwd(MXOpCall *c, UniformFill fill) {
  const RNNParam &p = *static_cast<const RNNParam *>(c->params);
  const RnnLayout lo(p);
  const bool lstm = p.mode == kLstm;
  const T *x0 = static_cast<const T *>(c->inputs[0].dptr);
  const T *w = static_cast<const T *>(c->inputs[1].dptr);
  const T *hx = static_cast<const T *>(c->inputs[2].dptr);
  const T *cx = lstm ? static_cast<const T *>(c->inputs[3].dptr) : nullptr;
  T *res = static_cast<T *>(c->outputs[c->nout - 1].dptr);
  const int threads = max_threads();
  if (c->workspace == nullptr || c->workspace_size < rnn_workspace_bytes(p, false, threads)) {
    c->error = "RNN: the workspace (TEMP_SPACE) is smaller than rnn_workspace_bytes";
    return -1;
  }
  const RnnGemm<Isa, T> gemm{c->workspace, threads};
  T *scratch = reinterpret_cast<T *>(static_cast<char *>(c->workspace) + threads * rnn_slab_bytes());
  T *pre = scratch, *sbuf = scratch + rnn_prepacked_elems(p), *tmp = sbuf + p.N * lo.gh();
  const int64_t rows = lo.rows(), GH = lo.gh(), H = p.H, P = p.P, DP = p.D * P;
  const int64_t N = p.N;
  const int64_t *lens = rnn_lengths(p, &c->inputs[lstm ? 4 : 3],
                                    reinterpret_cast<int64_t *>(tmp + N * H));
  for (int l = 0; l < p.L; ++l) {
    const T *xin = l == 0 ? x0 : res + (lo.dropout(l) ? lo.x_next(l - 1) : lo.y(l - 1));
    const int64_t in = lo.in(l);
    T *y = res + lo.y(l);
    for (int d = 0; d < p.D; ++d) {
      T *a = res + lo.gates(l, d);
      T *cs = lstm ? res + lo.extra(l, d, 0) : nullptr;
      T *hn = p.mode == kGru ? res + lo.extra(l, d, 0) : nullptr;
      T *rb = p.proj ? res + lo.extra(l, d, lstm ? 1 : 0) : nullptr;
      const T *wi = w + lo.w_i(l, d), *wh = w + lo.w_h(l, d), *wr = w + lo.w_r(l, d);
      rnn_fill_rows(a, rows, GH, GH, w + lo.b_i(l, d));
      gemm(rows, GH, in, xin, in, false, wi, in, true, a, GH, true);
      const RnnPackedB<T> whT = rnn_prepack<Isa, T>(wh, P, true, P, GH, pre);
      const T *h0 = hx + (int64_t(l) * p.D + d) * N * P;
      const T *c0 = lstm ? cx + (int64_t(l) * p.D + d) * N * H : nullptr;
      for (int64_t s = 0; s < p.T; ++s) {
        const int64_t t = rnn_step(p, d, s), tp = d == 0 ? t - 1 : t + 1;
        const T *hp = s == 0 ? h0 : y + tp * N * DP + d * P;
        const int64_t ldhp = s == 0 ? P : DP;
        rnn_fill_rows(sbuf, N, GH, GH, w + lo.b_h(l, d));
        rnn_gemm_packed<Isa, T>(c->workspace, threads, N, hp, ldhp, whT, sbuf, GH, true);
        const T *cprev = lstm ? (s == 0 ? c0 : cs + tp * N * H) : hp;
        const int64_t ldcp = lstm ? H : ldhp;
        T *hout = y + t * N * DP + d * P;
        rnn_gates_fwd(p, a + t * N * GH, sbuf, cprev, ldcp, lstm ? cs + t * N * H : nullptr,
                      hn ? hn + t * N * H : nullptr, rb ? rb + t * N * H : nullptr, hout, DP,
                      tmp, lens, t);
        if (p.proj) gemm(N, P, H, rb + t * N * H, H, false, wr, H, true, hout, DP, false);
        if (lens) rnn_carry(p, lens, t, hp, ldhp, hout, DP);
      }
    }
    if (lo.dropout(l + 1))
      rnn_dropout(p, c, fill, y, res + lo.mask(l), res + lo.x_next(l), lo.y_size(),
                  uint64_t(l) * lo.y_size());
  }
  // Outputs: out = Y of the last layer; hy, cy the states after each
  // direction's last step.
  T *out = static_cast<T *>(c->outputs[0].dptr);
  rnn_put(out, res + lo.y(p.L - 1), lo.y_size(), c->req[0]);
  if (lens && c->req[0] != MX_REQ_NULL)    // padded steps output zeros
    rnn_zero_padded(p, lens, res + lo.y(p.L - 1), out, c->req[0] == MX_REQ_ADD);
  if (p.state_outputs) {
    T *hy = static_cast<T *>(c->outputs[1].dptr);
    T *cy = lstm ? static_cast<T *>(c->outputs[2].dptr) : nullptr;
    for (int l = 0; l < p.L; ++l)
      for (int d = 0; d < p.D; ++d) {
        const int64_t t = rnn_step(p, d, p.T - 1), k = int64_t(l) * p.D + d;
        const T *y = res + lo.y(l) + t * N * DP + d * P;
        if (p.T == 0) {
          rnn_put(hy + k * N * P, hx + k * N * P, N * P, c->req[1]);
          if (lstm) rnn_put(cy + k * N * H, cx + k * N * H, N * H, c->req[2]);
          continue;
        }
        for (int64_t n = 0; n < N; ++n) rnn_put(hy + (k * N + n) * P, y + n * DP, P, c->req[1]);
        if (lstm) rnn_put(cy + k * N * H, res + lo.extra(l, d, 0) + t * N * H, N * H, c->req[2]);
      }
  }
  return 0;
}

// The backward of one step's nonlinearities, rows [0, N): dh (N, H: the
// gradient reaching o*tanh(c) or h), dc (N, H, in: from step t+1; out: to
// step t-1); writes the pre-activation gradients dai (input side) and dah
// (recurrent side; the same but GRU's n gate) and, for GRU, the direct
// part of dh_{t-1} into dhp.
template <typename T>
static void rnn_gates_bwd(const RNNParam &p, const T *a, const T *cst, const T *cprev,
                          int64_t ldcp, const T *hn, const T *dh, T *dc, T *dai, T *dah,
                          T *dhp, T *tmp, const int64_t *lens, int64_t t) {
  const int64_t H = p.H, G = p.G * H;
  team_for_cost(p.N, 8 * G, [&](int64_t n0, int64_t n1) {     // rows are independent
    for (int64_t n = n0; n < n1; ++n) {
      const T *an = a + n * G, *dhn = dh + n * H;
      T *di = dai + n * G, *tmpn = tmp + n * H;
      if (rnn_padded(lens, n, t)) {      // no gate gradient; dc passes through
        std::memset(di, 0, G * sizeof(T));
        if (p.mode == kGru) {
          std::memset(dah + n * G, 0, G * sizeof(T));
          std::memset(dhp + n * H, 0, H * sizeof(T));
        }
        continue;
      }
      if (p.mode == kLstm) {
        const T *ct = cst + n * H, *cp = cprev + n * ldcp;
        T *dcn = dc + n * H;
        vtanh(ct, tmpn, H);
        for (int64_t j = 0; j < H; ++j) {
          const T i = an[j], f = an[H + j], g = an[2 * H + j], o = an[3 * H + j], tc = tmpn[j];
          T dct = dcn[j] + dhn[j] * o * (T(1) - tc * tc);
          if (p.clip && (ct[j] <= T(p.clip_min) || ct[j] >= T(p.clip_max))) dct = T(0);
          di[j] = dct * g * i * (T(1) - i);
          di[H + j] = dct * cp[j] * f * (T(1) - f);
          di[2 * H + j] = dct * i * (T(1) - g * g);
          di[3 * H + j] = dhn[j] * tc * o * (T(1) - o);
          dcn[j] = dct * f;
        }
      } else if (p.mode == kGru) {
        const T *hp = cprev + n * ldcp, *hnn = hn + n * H;
        T *dhh = dah + n * G, *dp = dhp + n * H;
        for (int64_t j = 0; j < H; ++j) {
          const T r = an[j], z = an[H + j], nn = an[2 * H + j];
          const T dn = dhn[j] * (T(1) - z) * (T(1) - nn * nn);
          const T dr = dn * hnn[j] * r * (T(1) - r);
          const T dz = dhn[j] * (hp[j] - nn) * z * (T(1) - z);
          di[j] = dr; di[H + j] = dz; di[2 * H + j] = dn;
          dhh[j] = dr; dhh[H + j] = dz; dhh[2 * H + j] = dn * r;
          dp[j] = dhn[j] * z;
        }
      } else {
        for (int64_t j = 0; j < H; ++j) {
          const T h = an[j];
          di[j] = p.mode == kRnnTanh ? dhn[j] * (T(1) - h * h) : (h > T(0) ? dhn[j] : T(0));
        }
      }
    }
  });
}

// Column sums of rows x n (ld n) into out (=, or += with add).
template <typename T>
static void rnn_colsum(const T *g, int64_t rows, int64_t n, T *out, bool add) {
  if (!add) std::memset(out, 0, n * sizeof(T));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) out[j] += g[r * n + j];
}

// Inputs: out_grad[, hy_grad[, cy_grad]], data, parameters, state
// [, state_cell], reserve; outputs: data_grad, parameters_grad, state_grad
// [, state_cell_grad].
template <class Isa, typename T>
static int rnn_bwd(MXOpCall *c) {
  const RNNParam &p = *static_cast<const RNNParam *>(c->params);
  const RnnLayout lo(p);
  const bool lstm = p.mode == kLstm, gru = p.mode == kGru;
  int k = 0;
  const T *dout = static_cast<const T *>(c->inputs[k++].dptr);
  const T *dhy = p.state_outputs ? static_cast<const T *>(c->inputs[k++].dptr) : nullptr;
  const T *dcy = p.state_outputs && lstm ? static_cast<const T *>(c->inputs[k++].dptr) : nullptr;
  const T *x0 = static_cast<const T *>(c->inputs[k++].dptr);
  const T *w = static_cast<const T *>(c->inputs[k++].dptr);
  const T *hx = static_cast<const T *>(c->inputs[k++].dptr);
  const T *cx = lstm ? static_cast<const T *>(c->inputs[k++].dptr) : nullptr;
  const T *res = static_cast<const T *>(c->inputs[c->nin - 1].dptr);
  T *dx0 = static_cast<T *>(c->outputs[0].dptr), *dw = static_cast<T *>(c->outputs[1].dptr);
  T *dhx = static_cast<T *>(c->outputs[2].dptr);
  T *dcx = lstm ? static_cast<T *>(c->outputs[3].dptr) : nullptr;
  const int32_t rx = c->req[0], rw = c->req[1], rh = c->req[2], rc = lstm ? c->req[3] : 0;
  const int threads = max_threads();
  if (c->workspace == nullptr || c->workspace_size < rnn_workspace_bytes(p, true, threads)) {
    c->error = "RNN: the workspace (TEMP_SPACE) is smaller than rnn_workspace_bytes";
    return -1;
  }
  const RnnGemm<Isa, T> gemm{c->workspace, threads};
  const int64_t rows = lo.rows(), GH = lo.gh(), H = p.H, P = p.P, DP = p.D * P, N = p.N;
  T *sc = reinterpret_cast<T *>(static_cast<char *>(c->workspace) + threads * rnn_slab_bytes());
  T *pre = sc;                                         // W_h2h, packed
  T *dy = sc + rnn_prepacked_elems(p), *dxn = dy + lo.y_size();   // dY of this layer, dX
  T *dai = dxn + lo.y_size(), *dah = dai + rows * GH;  // gate gradients, all steps
  T *dhall = dah + rows * GH;                          // dh of all steps (projection)
  T *dh = dhall + rows * P, *dhn = dh + N * P;         // this step's dh, dh_{t-1}
  T *dc = dhn + N * P, *dr = dc + N * H, *dhp = dr + N * H, *tmp = dhp + N * H;
  const int64_t *lens = rnn_lengths(p, &c->inputs[k], reinterpret_cast<int64_t *>(tmp + N * H));
  const bool wadd = rw == MX_REQ_ADD, wnull = rw == MX_REQ_NULL;
  if (!wadd && !wnull) std::memset(dw, 0, lo.param_size() * sizeof(T));
  std::memcpy(dy, dout, lo.y_size() * sizeof(T));
  if (lens) rnn_zero_padded(p, lens, dy, dy, false);
  for (int l = p.L - 1; l >= 0; --l) {
    const T *xin = l == 0 ? x0 : res + (lo.dropout(l) ? lo.x_next(l - 1) : lo.y(l - 1));
    const int64_t in = lo.in(l);
    const T *y = res + lo.y(l);
    const bool to_data = l == 0;
    T *dxo = to_data ? dx0 : dxn;
    const bool need_dx = !to_data || rx != MX_REQ_NULL;
    for (int d = 0; d < p.D; ++d) {
      const int64_t kk = int64_t(l) * p.D + d;
      const T *a = res + lo.gates(l, d);
      const T *cs = lstm ? res + lo.extra(l, d, 0) : nullptr;
      const T *hn = gru ? res + lo.extra(l, d, 0) : nullptr;
      const T *rb = p.proj ? res + lo.extra(l, d, lstm ? 1 : 0) : nullptr;
      const T *wi = w + lo.w_i(l, d), *wh = w + lo.w_h(l, d), *wr = w + lo.w_r(l, d);
      const T *h0 = hx + kk * N * P;
      const T *c0 = lstm ? cx + kk * N * H : nullptr;
      T *dah_ = gru ? dah : dai;
      const RnnPackedB<T> whp = rnn_prepack<Isa, T>(wh, P, false, GH, P, pre);
      if (dhy) std::memcpy(dhn, dhy + kk * N * P, N * P * sizeof(T));
      else std::memset(dhn, 0, N * P * sizeof(T));
      if (lstm) {
        if (dcy) std::memcpy(dc, dcy + kk * N * H, N * H * sizeof(T));
        else std::memset(dc, 0, N * H * sizeof(T));
      }
      for (int64_t s = p.T - 1; s >= 0; --s) {
        const int64_t t = rnn_step(p, d, s), tp = d == 0 ? t - 1 : t + 1;
        const T *hp = s == 0 ? h0 : y + tp * N * DP + d * P;
        const int64_t ldhp = s == 0 ? P : DP;
        for (int64_t n = 0; n < N; ++n) {
          const T *src = dy + (t * N + n) * DP + d * P;
          T *dst = dh + n * P;
          for (int64_t j = 0; j < P; ++j) dst[j] = src[j] + dhn[n * P + j];
        }
        const T *dgate = dh;
        if (p.proj) {     // h = R W_hr^T: dR = dh W_hr
          std::memcpy(dhall + t * N * P, dh, N * P * sizeof(T));
          gemm(N, H, P, dh, P, false, wr, H, false, dr, H, false);
          dgate = dr;
        }
        const T *cprev = lstm ? (s == 0 ? c0 : cs + tp * N * H) : hp;
        rnn_gates_bwd(p, a + t * N * GH, lstm ? cs + t * N * H : nullptr, cprev,
                      lstm ? H : ldhp, hn ? hn + t * N * H : nullptr, dgate, dc,
                      dai + t * N * GH, dah + t * N * GH, dhp, tmp, lens, t);
        // dh_{t-1} = dA_h W_h2h (+ GRU's direct z * dh); padded rows pass dh on.
        rnn_gemm_packed<Isa, T>(c->workspace, threads, N, dah_ + t * N * GH, GH, whp, dhn, P,
                                false);
        if (gru)
          for (int64_t i = 0; i < N * P; ++i) dhn[i] += dhp[i];
        if (lens) rnn_carry(p, lens, t, dh, P, dhn, P);
      }
      rnn_put(dhx + kk * N * P, dhn, N * P, rh);
      if (lstm) rnn_put(dcx + kk * N * H, dc, N * H, rc);
      // dX (=, += for the second direction) = dA_i W_i2h over all steps.
      if (need_dx)
        gemm(rows, in, GH, dai, GH, false, wi, in, false, dxo, in,
             d > 0 || (to_data && rx == MX_REQ_ADD));
      if (wnull) continue;
      gemm(GH, in, rows, dai, GH, true, xin, in, false, dw + lo.w_i(l, d), in, true);
      // dW_h2h = sum_t dA_h[t]^T h_{t-1}: steps with h_{t-1} in Y, then step 0's.
      if (p.T > 1) {
        const int64_t t1 = d == 0 ? 1 : 0, tp1 = d == 0 ? 0 : 1;
        gemm(GH, P, (p.T - 1) * N, dah_ + t1 * N * GH, GH, true, y + tp1 * N * DP + d * P, DP,
             false, dw + lo.w_h(l, d), P, true);
      }
      if (p.T > 0) {
        const int64_t t0 = rnn_step(p, d, 0);
        gemm(GH, P, N, dah_ + t0 * N * GH, GH, true, h0, P, false, dw + lo.w_h(l, d), P, true);
      }
      if (p.proj)
        gemm(P, H, rows, dhall, P, true, rb, H, false, dw + lo.w_r(l, d), H, true);
      rnn_colsum(dai, rows, GH, dw + lo.b_i(l, d), true);
      rnn_colsum(dah_, rows, GH, dw + lo.b_h(l, d), true);
    }
    if (!to_data) {     // dY of layer l-1: through the dropout mask
      if (lo.dropout(l)) {
        const T *mask = res + lo.mask(l - 1);
        for (int64_t i = 0; i < lo.y_size(); ++i) dy[i] = dxn[i] * mask[i];
      } else {
        std::memcpy(dy, dxn, lo.y_size() * sizeof(T));
      }
    }
  }
  return 0;
}

// Runs f(Isa tag, T value tag) for the call's instruction set and dtype.
template <class F>
static inline int rnn_dispatch(MXOpCall *c, F &&f) {
  return with_gemm_isa([&](auto isa) {
    switch (c->inputs[0].dtype) {
      case MX_FLOAT32: return f(isa, float(0));
      case MX_FLOAT64: return f(isa, double(0));
      default:
        c->error = "unsupported dtype (RNN needs float32 or float64)";
        return -1;
    }
  });
}

static int rnn_forward(MXOpCall *c, UniformFill fill) {
  return rnn_dispatch(c, [&](auto isa, auto v) {
    return rnn_fwd<decltype(isa), decltype(v)>(c, fill);
  });
}

static int rnn_backward(MXOpCall *c) {
  return rnn_dispatch(c, [&](auto isa, auto v) {
    return rnn_bwd<decltype(isa), decltype(v)>(c);
  });
}

}  // namespace mxop
#endif  // MX_OPS_RNN_CPU_H_
