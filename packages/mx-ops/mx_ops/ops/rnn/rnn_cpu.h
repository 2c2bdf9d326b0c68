// The fused RNN (MXNet 1.x's RNN operator: rnn_relu, rnn_tanh, lstm, gru;
// layers, directions, LSTM projection and state clipping, dropout between
// layers) on the CPU, forward and backward through time.
//
// Per layer and direction the input projections of all T steps are one
// GEMM (T*N rows, W_i2h packed once) into the gate buffer, which starts
// from both biases (but GRU's: its n gate needs the recurrent side apart;
// and LSTM's, which its cell loop adds: rnn_cell_fwd.h); each step then
// adds the recurrent GEMM (N rows, W_h2h packed once) to its rows and
// applies the gate nonlinearities in one pass of the team, each thread
// taking a block of hidden units of every gate (rnn_step_fused).  The
// backward stores every step's gate gradients, so the weight and input
// gradients are again one GEMM each over all T steps; only dh . W_h2h runs
// per step.  All GEMMs are gemm_cpu.h's (split over an OpenMP team, packing
// buffers in the call's workspace).
//
// The forward keeps what the backward needs in the hidden 'reserve' output
// (rnn_layout.h): each layer's output Y, the dropout mask and the dropped
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

#include <cstdint>
#include <cstring>

#include "nn_common.h"
#include "parallel.h"
#include "rnn_cells.h"
#include "rnn_gemm.h"
#include "rnn_layout.h"

namespace mxop {

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
  const bool lstm = p.mode == kLstm, gru = p.mode == kGru;
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
  T *pre = scratch, *sbuf = scratch + rnn_prepacked_elems(p), *bsum = sbuf + p.N * lo.gh();
  T *tmp = bsum + lo.gh();
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
      T *hn = gru ? res + lo.extra(l, d, 0) : nullptr;
      T *rb = p.proj ? res + lo.extra(l, d, lstm ? 1 : 0) : nullptr;
      const T *wi = w + lo.w_i(l, d), *wh = w + lo.w_h(l, d), *wr = w + lo.w_r(l, d);
      // A = x W_i2h^T + b_i2h for all steps (+ b_h2h but for GRU, whose
      // n gate needs the recurrent side apart: then each step's S gets it);
      // LSTM's cell loop adds both biases itself (rnn_gates_fwd).
      const T *bi = w + lo.b_i(l, d), *bh = w + lo.b_h(l, d);
      if (!gru)
        for (int64_t j = 0; j < GH; ++j) bsum[j] = bi[j] + bh[j];
      const RnnPackedB<T> wiT = rnn_prepack<Isa, T>(wi, in, true, in, GH, pre);
      rnn_gemm_packed<Isa, T>(c->workspace, threads, rows, xin, in, wiT, a, GH, false,
                              gru ? bi : (lstm ? nullptr : bsum));
      const RnnPackedB<T> whT = rnn_prepack_gates<Isa, T>(wh, P, H, p.G, pre);
      const T *h0 = hx + (int64_t(l) * p.D + d) * N * P;
      const T *c0 = lstm ? cx + (int64_t(l) * p.D + d) * N * H : nullptr;
      for (int64_t s = 0; s < p.T; ++s) {
        const int64_t t = rnn_step(p, d, s), tp = d == 0 ? t - 1 : t + 1;
        const T *hp = s == 0 ? h0 : y + tp * N * DP + d * P;
        const int64_t ldhp = s == 0 ? P : DP;
        const T *cprev = lstm ? (s == 0 ? c0 : cs + tp * N * H) : hp;
        const int64_t ldcp = lstm ? H : ldhp;
        T *hout = y + t * N * DP + d * P;
        // The recurrent side: into S apart (GRU), else added to A's rows.
        T *at = a + t * N * GH, *st = gru ? sbuf : at;
        rnn_step_fused<Isa, T>(threads, N, H, p.G, hp, ldhp, whT, gru ? bh : nullptr, st,
                               [&](int64_t j0, int64_t j1) {
          rnn_gates_fwd(p, at, gru ? sbuf : nullptr, bsum, cprev, ldcp,
                        lstm ? cs + t * N * H : nullptr,
                        hn ? hn + t * N * H : nullptr, rb ? rb + t * N * H : nullptr, hout, DP,
                        lens, t, j0, j1);
        });
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
