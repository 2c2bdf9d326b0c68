// One instruction set's copy of the vectorized exp (see vexp.h, which
// includes this file once per instruction set inside `#pragma GCC target`
// regions, with MX_VEXP_NS naming the namespace).  No include guard on
// purpose.
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
static inline float exp1(float x) {
  const float hi = 88.72283935546875f, lo = -103.97283172607421875f;
  const float xc = __builtin_isgreater(x, hi) ? hi : (__builtin_isless(x, lo) ? lo : x);
  const float nf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   // round(x/ln2)
  float r = xc - nf * 0.693359375f;
  r = r + nf * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  const float y = p * (r * r) + r + 1.0f;
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

// y[i] = exp(x[i]) (y may be x).
template <typename A>
static void exp_n(const A *x, A *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = exp1(x[i]);
}

// y[i] = exp((x[i] - shift) * scale) (y may be x); returns the sum of y.
template <typename A>
static A exp_shift_sum(const A *x, A *y, int64_t n, A shift, A scale) {
  A s = A(0);
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    const A e = exp1((x[i] - shift) * scale);
    y[i] = e;
    s += e;
  }
  return s;
}

}  // namespace MX_VEXP_NS
}  // namespace mxop
