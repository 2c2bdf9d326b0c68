// The fused RNN's parameter block (packed by mx_ops.ops.rnn.rnn), the
// offsets of every weight and bias in MXNet's parameter vector and of every
// buffer in the hidden reserve output, and the workspace a call needs.
#ifndef MX_OPS_RNN_LAYOUT_H_
#define MX_OPS_RNN_LAYOUT_H_

#include <cstdint>

#include "../nn/gemm_cpu.h"

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

// Elements of a weight packed once per layer and direction (one at a
// time): in the forward W_i2h^T (in x G*H: rnn_prepack), then W_h2h^T
// (P x G*H, each gate's columns padded to whole panels: rnn_prepack_gates);
// in the backward W_h2h (G*H x P: rnn_prepack).
static inline int64_t rnn_prepacked_elems(const RNNParam &p) {
  const int64_t gh = p.G * p.H, f = p.G * round_up(p.H, kGemmMaxNR) * p.P;
  const int64_t in = p.L > 1 && p.D * p.P > p.I ? p.D * p.P : p.I;
  const int64_t i = round_up(gh, kGemmMaxNR) * in;
  const int64_t b = round_up(p.P, kGemmMaxNR) * gh;
  const int64_t m = f > b ? f : b;
  return round_up(m > i ? m : i, 16);
}

// Scratch elements: the prepacked weight, then forward: the step's
// recurrent GEMM (N, G*H: GRU), b_i2h + b_h2h (G*H) and (N, H) that
// the forward no longer uses (the backward's count relies on it: its tanh(c));
// backward: two dY buffers, the gate
// gradients of all steps (input and recurrent side), dh of all steps
// (projection), dh, dc, dR.
static inline int64_t rnn_scratch_elems(const RNNParam &p, bool backward) {
  const RnnLayout lo(p);
  const int64_t nf =
      rnn_prepacked_elems(p) + (p.N + 1) * lo.gh() + p.N * p.H + p.N;  // + lengths
  if (!backward) return nf;
  return 2 * lo.y_size() + 2 * lo.rows() * lo.gh() + lo.rows() * p.P + 2 * p.N * p.P +
         2 * p.N * p.H + p.N * p.H + nf;
}

static inline int64_t rnn_workspace_bytes(const RNNParam &p, bool backward, int threads) {
  return threads * rnn_slab_bytes() + round_up(rnn_scratch_elems(p, backward) * 8, 64) + 64;
}

}  // namespace mxop
#endif  // MX_OPS_RNN_LAYOUT_H_
