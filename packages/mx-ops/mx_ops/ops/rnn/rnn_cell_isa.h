// One instruction set's copy of the LSTM and GRU cells' forward pass (see
// rnn_cell_fwd.h, which includes this file once per instruction set inside
// a `#pragma GCC target` region, with MX_RNN_CELL_NS naming the namespace
// and MX_VEXP_NS vexp.h's functions of the same set).  No include guard on
// purpose.

namespace mxop {
namespace MX_RNN_CELL_NS {

using MX_VEXP_NS::abs1;
using MX_VEXP_NS::exp1;
using MX_VEXP_NS::tanh1;

// e^x for x <= 0 in float, for the gates: vexp's exp1 (the same reduction
// and polynomial) less what a gate does not need: 2^n is one multiply, and x
// below -87 gives 0 (no subnormals; 2^n's one multiply would need n >= -126).
// MXNet 1.9.1's LSTM gives its gates exactly 0 there too: 0 from about
// -86.99 (a gate pre-activation of -1e4 gives 0, not a tiny number).
// Five of these per unit are most of a step's nonlinearity time; exp1's
// overflow and subnormal care made them half again as expensive.
static inline float exp_neg(float x) {
  const bool under = __builtin_isless(x, -87.0f);
  const float xc = under ? -87.0f : x;     // in 2^n's range; nan stays nan
  const MX_VEXP_NS::ExpParts e = MX_VEXP_NS::exp_parts(xc);
  const float v = e.y * __builtin_bit_cast(float, uint32_t(int32_t(e.nf) + 127) << 23);
  return under ? 0.0f : v;
}
static inline double exp_neg(double x) { return exp1(x); }

// vexp's sigmoid on exp_neg.
template <typename A>
static inline A gate_sigmoid(A x) { return MX_VEXP_NS::sigmoid_on<A, exp_neg>(x); }

// tanh in float: tanh1's odd polynomial below |x| = 0.625, above it
// (1 - e) / (1 + e) with e = exp_neg(-2|x|) (tanh1 computes the same as
// 1 - 2 / (e^2|x| + 1) with the full exp); x's sign put back.  Double: tanh1.
static inline float gate_tanh(float x) {
  const float ax = __builtin_fabsf(x);
  const float e = exp_neg(-(ax + ax));
  const float large = (1.0f - e) / (1.0f + e);
  const float small = MX_VEXP_NS::tanh_small(x);
  return __builtin_copysignf(__builtin_isless(ax, 0.625f) ? small : large, x);
}
static inline double gate_tanh(double x) { return tanh1(x); }

// One batch row, units [0, len): the bias added, the four gates activated
// in place, c = f * c_prev + i * g (clipped) and h = o * tanh(c), all in
// one vectorized loop: the row's gates are read once from L1 and the cell
// never goes through a tanh(c) buffer.  The clipping options are template
// arguments: a select on a run-time flag inside the loop keeps GCC from
// vectorizing it.  flatten: five exps exceed GCC's inlining budget, and an
// exp1 left a call makes the loop call it lane by lane.
template <bool CLIP, bool CLIP_NAN, typename A>
__attribute__((flatten)) static void lstm_row_clip(const LstmRow<A> &r, int64_t len) {
  const int64_t H = r.H;
  A *__restrict gi = r.a, *__restrict gf = r.a + H, *__restrict gg = r.a + 2 * H;
  A *__restrict go = r.a + 3 * H, *__restrict c = r.c, *__restrict h = r.h;
  const A *__restrict bi = r.bias, *__restrict bf = r.bias + H, *__restrict bg = r.bias + 2 * H;
  const A *__restrict bo = r.bias + 3 * H, *__restrict cp = r.cprev;
  const A lo = r.clip_min, hi = r.clip_max;
#pragma omp simd
  for (int64_t j = 0; j < len; ++j) {
    const A i = gate_sigmoid(gi[j] + bi[j]), f = gate_sigmoid(gf[j] + bf[j]);
    const A g = gate_tanh(gg[j] + bg[j]), o = gate_sigmoid(go[j] + bo[j]);
    gi[j] = i;
    gf[j] = f;
    gg[j] = g;
    go[j] = o;
    A cn = f * cp[j] + i * g;
    // The state clipping: nan stays nan (the comparisons fail) unless
    // clip_nan makes it clip_min.
    if (CLIP) cn = __builtin_isless(cn, lo) ? lo : (__builtin_isgreater(cn, hi) ? hi : cn);
    if (CLIP_NAN) cn = __builtin_isunordered(cn, cn) ? lo : cn;
    c[j] = cn;
    h[j] = o * gate_tanh(cn);
  }
}

template <typename A>
static void lstm_row(const LstmRow<A> &r, int64_t len) {
  if (!r.clip) return lstm_row_clip<false, false>(r, len);
  if (r.clip_nan) return lstm_row_clip<true, true>(r, len);
  lstm_row_clip<true, false>(r, len);
}

// One GRU batch row, units [0, len): r and z from both sides, hn = the
// recurrent n term (kept for the backward), n = tanh(x W_in + b_in + r hn),
// h = (1 - z) n + z h_prev; the activated gates written over a.
template <typename A>
__attribute__((flatten)) static void gru_row(const GruRow<A> &w, int64_t len) {
  const int64_t H = w.H;
  A *__restrict ar = w.a, *__restrict az = w.a + H, *__restrict an = w.a + 2 * H;
  const A *__restrict sr = w.s, *__restrict sz = w.s + H, *__restrict sn = w.s + 2 * H;
  const A *__restrict hp = w.hprev;
  A *__restrict hn = w.hn, *__restrict h = w.h;
#pragma omp simd
  for (int64_t j = 0; j < len; ++j) {
    const A r = gate_sigmoid(ar[j] + sr[j]), z = gate_sigmoid(az[j] + sz[j]);
    const A n = gate_tanh(an[j] + r * sn[j]);
    ar[j] = r;
    az[j] = z;
    an[j] = n;
    hn[j] = sn[j];
    h[j] = (A(1) - z) * n + z * hp[j];
  }
}

}  // namespace MX_RNN_CELL_NS
}  // namespace mxop
