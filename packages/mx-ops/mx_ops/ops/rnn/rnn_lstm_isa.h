// One instruction set's copy of the LSTM cell's forward pass (see
// rnn_lstm_cell.h, which includes this file once per instruction set inside
// a `#pragma GCC target` region, with MX_RNN_CELL_NS naming the namespace
// and MX_VEXP_NS vexp.h's functions of the same set).  No include guard on
// purpose.

namespace mxop {
namespace MX_RNN_CELL_NS {

using MX_VEXP_NS::sigmoid1;
using MX_VEXP_NS::tanh1;

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
    const A i = sigmoid1(gi[j] + bi[j]), f = sigmoid1(gf[j] + bf[j]);
    const A g = tanh1(gg[j] + bg[j]), o = sigmoid1(go[j] + bo[j]);
    gi[j] = i;
    gf[j] = f;
    gg[j] = g;
    go[j] = o;
    A cn = f * cp[j] + i * g;
    // rnn_clip's rule: nan stays nan (the comparisons fail) unless
    // clip_nan makes it clip_min.
    if (CLIP) cn = __builtin_isless(cn, lo) ? lo : (__builtin_isgreater(cn, hi) ? hi : cn);
    if (CLIP_NAN) cn = __builtin_isunordered(cn, cn) ? lo : cn;
    c[j] = cn;
    h[j] = o * tanh1(cn);
  }
}

template <typename A>
static void lstm_row(const LstmRow<A> &r, int64_t len) {
  if (!r.clip) return lstm_row_clip<false, false>(r, len);
  if (r.clip_nan) return lstm_row_clip<true, true>(r, len);
  lstm_row_clip<true, false>(r, len);
}

}  // namespace MX_RNN_CELL_NS
}  // namespace mxop
