// The LSTM and GRU cells' forward nonlinearities as one vectorized loop per
// batch row (rnn_cell_isa.h, compiled per instruction set like vexp.h and
// picked by cpu_isa()).  Separate vsigmoid / vtanh passes over each gate,
// then scalar loops for c and h (compiled for the baseline instruction
// set), took about a tenth of a forward step.
#ifndef MX_OPS_RNN_CELL_FWD_H_
#define MX_OPS_RNN_CELL_FWD_H_

#include <cstdint>

#include "isa.h"
#include "vexp.h"

namespace mxop {

// One batch row of one step: a holds the row's pre-activations of gates
// i, f, g, o (gate k at a + k*H) without the bias (b_i2h + b_h2h, the same
// layout), and receives the activated gates; c and h receive the row's new
// cell and o * tanh(c); clip as RNNParam's state clipping.
template <typename A>
struct LstmRow {
  A *a;
  const A *bias, *cprev;
  A *c, *h;
  int64_t H;
  bool clip, clip_nan;
  A clip_min, clip_max;
};

// One GRU batch row of one step: a holds the row's input side of gates r,
// z, n (gate k at a + k*H, b_i2h included) and receives the activated
// gates; s the recurrent side (h W_h2h^T + b_h2h, the same layout); hn
// receives s's n gate, h the new state (h_prev: the previous one).
template <typename A>
struct GruRow {
  A *a;
  const A *s, *hprev;
  A *hn, *h;
  int64_t H;
};

}  // namespace mxop

#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#pragma GCC optimize("no-trapping-math")
#define MX_RNN_CELL_NS rnn_cell_avx512
#define MX_VEXP_NS vexp_avx512
#include "rnn_cell_isa.h"
#undef MX_RNN_CELL_NS
#undef MX_VEXP_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("no-trapping-math")
#define MX_RNN_CELL_NS rnn_cell_avx2
#define MX_VEXP_NS vexp_avx2
#include "rnn_cell_isa.h"
#undef MX_RNN_CELL_NS
#undef MX_VEXP_NS
#pragma GCC pop_options
#endif

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#define MX_RNN_CELL_NS rnn_cell_generic
#define MX_VEXP_NS vexp_generic
#include "rnn_cell_isa.h"
#undef MX_RNN_CELL_NS
#undef MX_VEXP_NS
#pragma GCC pop_options

namespace mxop {

// lstm_row for units [0, len) of the row r describes.
template <typename A>
static inline void rnn_lstm_row(const LstmRow<A> &r, int64_t len) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return rnn_cell_avx512::lstm_row(r, len);
    case ISA_AVX2: return rnn_cell_avx2::lstm_row(r, len);
    default: break;
  }
#endif
  rnn_cell_generic::lstm_row(r, len);
}

// gru_row for units [0, len) of the row w describes.
template <typename A>
static inline void rnn_gru_row(const GruRow<A> &w, int64_t len) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return rnn_cell_avx512::gru_row(w, len);
    case ISA_AVX2: return rnn_cell_avx2::gru_row(w, len);
    default: break;
  }
#endif
  rnn_cell_generic::gru_row(w, len);
}

}  // namespace mxop
#endif  // MX_OPS_RNN_CELL_FWD_H_
