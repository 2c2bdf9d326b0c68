// One instruction set's copy of the vectorized exp, tanh and sigmoid (see
// vexp.h, which includes this file once per instruction set inside
// // `#pragma GCC target` regions, with MX_VEXP_NS naming the namespace).  No
// include guard on purpose.
//
// Every function is branch-free over its elements, so `#pragma omp simd`
// loops vectorize (the regions set no-trapping-math: GCC will not
// if-convert a comparison that may raise an FP exception flag, and no
// kernel reads those flags).

namespace mxop {
namespace MX_VEXP_NS {

// exp(x) in float: Cody-Waite reduction x = n ln2 + r (|r| <= ln2/2, ln2 in
// two parts), Cephes' expf polynomial for exp(r), and 2^n applied as
// 2^(n/2) twice so that results down to the subnormals are rounded once.
// Within 1 ulp of the correctly rounded exp over the float range; inf, -inf
// and nan give inf, 0 and nan.
// x (in exp1's range) = n ln2 + r: n and e^r, the reduction and polynomial
// of exp1 (also the RNN cell's gate exp, rnn_cell_isa.h).
struct ExpParts {
  float nf, y;
};
static inline ExpParts exp_parts(float xc) {
  const float nf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   // round(x/ln2)
  float r = xc - nf * 0.693359375f;
  r = r + nf * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  return ExpParts{nf, p * (r * r) + r + 1.0f};
}

static inline float exp1(float x) {
  const float hi = 88.72283935546875f, lo = -103.97283172607421875f;
  const float xc = __builtin_isgreater(x, hi) ? hi : (__builtin_isless(x, lo) ? lo : x);
  const ExpParts e = exp_parts(xc);
  const float nf = e.nf, y = e.y;
  const int32_t n = int32_t(nf), n1 = n >> 1, n2 = n - n1;
  const float s1 = __builtin_bit_cast(float, uint32_t(n1 + 127) << 23);
  const float s2 = __builtin_bit_cast(float, uint32_t(n2 + 127) << 23);
  float v = y * s1 * s2;
  v = __builtin_isgreater(x, hi) ? __builtin_inff() : v;
  v = __builtin_isless(x, lo) ? 0.0f : v;
  return __builtin_isunordered(x, x) ? x : v;
}

// exp(x) in double: the same reduction and Cephes' exp rational
// approximation; within 2 ulp over the double range.  The integers of 2^n
// come from the rounding constant's low bits, because AVX2 and SSE2 have no
// double -> int64 conversion.
static inline double exp1(double x) {
  const double hi = 709.782712893383996843, lo = -745.13321910194110842;
  const double magic = 6755399441055744.0;                   // 1.5 * 2^52
  const uint64_t mbits = __builtin_bit_cast(uint64_t, magic);
  const double xc = __builtin_isgreater(x, hi) ? hi : (__builtin_isless(x, lo) ? lo : x);
  const double nf = (xc * 1.4426950408889634073599 + magic) - magic;
  double r = xc - nf * 6.93145751953125E-1;
  r = r - nf * 1.42860682030941723212E-6;
  const double xx = r * r;
  const double px = r * ((1.26177193074810590878E-4 * xx + 3.02994407707441961300E-2) * xx +
                         9.99999999999999999910E-1);
  const double qx = ((3.00198505138664455042E-6 * xx + 2.52448340349684104192E-3) * xx +
                     2.27265548208155028766E-1) * xx + 2.00000000000000000009E0;
  const double y = 1.0 + 2.0 * (px / (qx - px));
  const double n1f = (nf * 0.5 - 0.25 + magic) - magic, n2f = nf - n1f;   // floor(n/2), rest
  const double s1 = __builtin_bit_cast(
      double, (__builtin_bit_cast(uint64_t, n1f + magic) - mbits + 1023) << 52);
  const double s2 = __builtin_bit_cast(
      double, (__builtin_bit_cast(uint64_t, n2f + magic) - mbits + 1023) << 52);
  double v = y * s1 * s2;
  v = __builtin_isgreater(x, hi) ? __builtin_inf() : v;
  v = __builtin_isless(x, lo) ? 0.0 : v;
  return __builtin_isunordered(x, x) ? x : v;
}

// tanh(x) in float (Cephes' tanhf): below |x| = 0.625 its odd polynomial
// x + x^3 P(x^2), which keeps the small results exact; above,
// 1 - 2 / (exp(2|x|) + 1), which goes to 1 without overflow trouble (exp1
// gives inf past 88.7: 2 / inf is 0).  Both sides are computed and one is
// selected, so the loop stays branch-free; x's sign is put on the result
// (tanh is odd, and the polynomial turns -0.0 into +0.0).  nan stays nan
// (exp1 passes it through), +-inf give +-1.  Within 2 ulp of the correctly
// rounded tanh (tests/test_nn_basic.py sweeps the float range).
// tanh1's odd polynomial, for |x| < 0.625.
static inline float tanh_small(float x) {
  const float z = x * x;
  float p = -5.70498872745E-3f;
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  return p * z * x + x;
}

static inline float tanh1(float x) {
  const float ax = __builtin_fabsf(x);
  const float small = tanh_small(x);
  const float large = 1.0f - 2.0f / (exp1(ax + ax) + 1.0f);
  return __builtin_copysignf(__builtin_isless(ax, 0.625f) ? small : large, x);
}

// tanh(x) in double (Cephes' tanh): x + x^3 P(x^2)/Q(x^2) below |x| = 0.625,
// 1 - 2 / (exp(2|x|) + 1) above, as for float; within 2 ulp.
static inline double tanh1(double x) {
  const double ax = __builtin_fabs(x);
  const double z = x * x;
  const double p = (-9.64399179425052238628E-1 * z - 9.92877231001918586564E1) * z -
                   1.61468768441708447952E3;
  const double q = ((z + 1.12811678491632931402E2) * z + 2.23548839060100448583E3) * z +
                   4.84406305325125486048E3;
  const double small = x + x * z * (p / q);
  const double large = 1.0 - 2.0 / (exp1(ax + ax) + 1.0);
  return __builtin_copysign(__builtin_isless(ax, 0.625) ? small : large, x);
}

static inline float abs1(float x) { return __builtin_fabsf(x); }
static inline double abs1(double x) { return __builtin_fabs(x); }

// sigmoid(x) = 1 / (1 + exp(-x)) on the exp function EXP, from
// e = EXP(-|x|) <= 1, which never overflows: 1 / (1 + e) for x >= 0 and
// e / (1 + e) below, so that large negative x give EXP's tiny results.
// sigmoid1 runs it on exp1, the RNN cells' gates (rnn_cell_isa.h) on a
// cheaper exp of their own.
template <typename A, A (*EXP)(A)>
static inline A sigmoid_on(A x) {
  const A e = EXP(-abs1(x));
  const A r = A(1) / (A(1) + e);
  return __builtin_isless(x, A(0)) ? e * r : r;
}

// sigmoid on exp1: large negative x give exp(x)'s tiny (down to subnormal)
// results instead of the 0 that 1 / (1 + inf) rounds to.  nan stays nan;
// +-inf give 1 and 0.  Within 3 ulp (float) of the correctly rounded value.
template <typename A>
static inline A sigmoid1(A x) { return sigmoid_on<A, exp1>(x); }

// y[i] = tanh(x[i]) (y may be x).
template <typename A>
static void tanh_n(const A *x, A *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = tanh1(x[i]);
}

// y[i] = sigmoid(x[i]) (y may be x).
template <typename A>
static void sigmoid_n(const A *x, A *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = sigmoid1(x[i]);
}

// y[i] = exp(x[i]) (y may be x).
template <typename A>
static void exp_n(const A *x, A *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = exp1(x[i]);
}


// exp(t) for a term of a sum that holds exp(0) = 1 (t = (x - shift) * scale
// <= 0, see sum_exp_below; any t <= 88 works): exp1's reduction and polynomial
// with one clamp and one scaling instead of exp1's 2^(n/2) twice and its
// inf/0/nan selects (a sum of 1M: 0.23 ms on one core of the AVX-512 EPYC
// VM against 0.45 for exp_shift_sum).  Below -126 ln2 it returns 2^-126 y
// (under 1.2e-38, where exp gives 0 or a subnormal), which the sum >= 1
// absorbs; nan stays nan (the clamp keeps an unordered t).  Checked over
// every float in [-126 ln2, 0]: within 1.01 ulp of exp, as exp1.
static inline float exp_term1(float t) {
  const float lo = -87.33654475f;                               // -126 ln2
  const float tc = __builtin_isless(t, lo) ? lo : t;
  const float k = tc * 1.44269504088896341f + 12582912.0f;      // round(t/ln2) + 1.5 2^23
  const ExpParts e = exp_parts(tc);
  // 2^n from k's low bits: n + 127 in the exponent field (n >= -126).
  const float s = __builtin_bit_cast(float, (__builtin_bit_cast(uint32_t, k) - 0x4B400000u + 127u) << 23);
  return e.y * s;
}
static inline double exp_term1(double t) { return exp1(t); }   // double: exp1 as is

// exp(t) for t <= 0 to be kept (a softmax's exponent): exp_term1, which
// gives exp1's bits from -126 ln2 up (the same reduction and polynomial;
// its one scaling by 2^n is exact there, as exp1's two are), and 0 below
// (exp1: subnormals under 1.2e-38, or 0), so that -inf and masked entries
// give exactly 0.  Half the instructions of exp1.
static inline float exp_below1(float t) {
  return __builtin_isless(t, -87.33654475f) ? 0.0f : exp_term1(t);
}
static inline double exp_below1(double t) { return exp1(t); }

// y[i] = exp((x[i] - shift) * scale) (y may be x), every exponent <= 0 (the
// shift is x's maximum for scale > 0, its minimum for scale < 0); returns
// the sum of y.
template <typename A>
static A exp_shift_sum_below(const A *x, A *y, int64_t n, A shift, A scale) {
  A s = A(0);
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    const A e = exp_below1((x[i] - shift) * scale);
    y[i] = e;
    s += e;
  }
  return s;
}

// The sum of exp((x[i] - shift) * scale), every exponent <= 0 and one of
// them 0 (exp_term1: the shift is the maximum of x for scale > 0, the
// minimum for scale < 0).  16 running sums whatever the vector width: with
// SSE2's 4 lanes each added 250 terms of a 1000-float row and the loss
// missed float64 by 7.5e-7 (2e-7 with 16 sums, on every instruction set).
// SCALED false skips the product (scale 1: 5% of the time of a 1000-float
// row; the sums are the same, the product being exact).
template <bool SCALED, typename A>
static A sum_exp_below_on(const A *x, int64_t n, A shift, A scale) {
  constexpr int64_t kLanes = 16;
  A acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (int64_t k = 0; k < kLanes; ++k) {
      const A t = x[i + k] - shift;
      acc[k] += exp_term1(SCALED ? t * scale : t);
    }
  }
  A s = A(0);
  for (; i < n; ++i) s += exp_term1(SCALED ? (x[i] - shift) * scale : x[i] - shift);
  for (int64_t w = kLanes / 2; w >= 1; w /= 2)
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return s + acc[0];
}

template <typename A>
static A sum_exp_below(const A *x, int64_t n, A shift, A scale) {
  return scale == A(1) ? sum_exp_below_on<false>(x, n, shift, scale)
                       : sum_exp_below_on<true>(x, n, shift, scale);
}

// sum[l] += exp(t[l]) for l < n, each sum ending >= 1 (exp_term1): the
// per-row sums of a block of rows walked side by side.
template <typename A>
static void acc_exp_below(const A *t, A *sum, int64_t n) {
#pragma omp simd
  for (int64_t l = 0; l < n; ++l) sum[l] += exp_term1(t[l]);
}

}  // namespace MX_VEXP_NS
}  // namespace mxop
