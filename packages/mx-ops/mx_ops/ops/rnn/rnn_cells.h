// One time step's gate nonlinearities of the fused RNN (lstm, gru,
// rnn_tanh, rnn_relu), forward (a block of hidden units) and backward
// (split over the batch rows), and
// the padded steps of use_sequence_length.
#ifndef MX_OPS_RNN_CELLS_H_
#define MX_OPS_RNN_CELLS_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "rnn_gemm.h"
#include "rnn_cell_fwd.h"
#include "vexp.h"

namespace mxop {

// The time step processed s-th by direction d.
static inline int64_t rnn_step(const RNNParam &p, int d, int64_t s) {
  return d == 0 ? s : p.T - 1 - s;
}

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

// One step's nonlinearities for every row and the hidden units [j0, j1):
// a = the gates' pre-activation input side (T*N layout row block of step
// t), s = the recurrent side (GRU; the other modes have it added to a
// already: s is nullptr), lstm_bias = LSTM's b_i2h + b_h2h (not in a: the
// cell loop adds it, which spares the input projection a pass writing it
// into every row first); writes the activated gates over a, the new
// c / hn / o*tanh(c) extras and h into hout (ld ldh).  Units are
// independent, so the threads of a step each take a block of units
// (rnn_step_fused) right after computing its gate columns.
template <typename T>
static void rnn_gates_fwd(const RNNParam &p, T *a, const T *s, const T *lstm_bias,
                          const T *cprev, int64_t ldcp, T *cnew, T *hn, T *rbuf, T *hout,
                          int64_t ldh, const int64_t *lens, int64_t t, int64_t j0, int64_t j1) {
  const int64_t H = p.H, G = p.G * H, len = j1 - j0;
  for (int64_t n = 0; n < p.N; ++n) {
    T *an = a + n * G + j0;
    const T *sn = s ? s + n * G + j0 : nullptr;
    T *h = (p.proj ? rbuf + n * H : hout + n * ldh) + j0;
    if (rnn_padded(lens, n, t)) {      // gates 0, c carried (h: rnn_carry)
      for (int g = 0; g < p.G; ++g) std::memset(an + g * H, 0, len * sizeof(T));
      if (p.mode == kLstm) std::memcpy(cnew + n * H + j0, cprev + n * ldcp + j0, len * sizeof(T));
      if (hn) std::memset(hn + n * H + j0, 0, len * sizeof(T));
      if (p.proj) std::memset(h, 0, len * sizeof(T));
      continue;
    }
    if (p.mode == kLstm) {     // s is nullptr: the recurrent side is in a
      const LstmRow<T> row{an, lstm_bias + j0, cprev + n * ldcp + j0, cnew + n * H + j0, h, H,
                           p.clip != 0, p.clip_nan != 0, T(p.clip_min), T(p.clip_max)};
      rnn_lstm_row(row, len);
    } else if (p.mode == kGru) {      // cprev is h_{t-1}
      const GruRow<T> row{an, sn, cprev + n * ldcp + j0, hn + n * H + j0, h, H};
      rnn_gru_row(row, len);
    } else {
      if (s)
        for (int64_t j = 0; j < len; ++j) an[j] += sn[j];
      if (p.mode == kRnnTanh) vtanh(an, an, len);
      else for (int64_t j = 0; j < len; ++j) an[j] = an[j] > T(0) ? an[j] : T(0);
      for (int64_t j = 0; j < len; ++j) h[j] = an[j];
    }
  }
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

}  // namespace mxop
#endif  // MX_OPS_RNN_CELLS_H_
