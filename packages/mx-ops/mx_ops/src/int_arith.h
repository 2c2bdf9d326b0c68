// Integer arithmetic that no data value can trap on or make undefined, for
// every CPU kernel that takes integer dtypes.  mx_ops.core._device_code.INT_ARITH
// is its twin for the GPU kernels, function for function, and the tests
// compile that for the host and compare the two on edge values.
//
// C leaves each case below undefined somewhere (x86-64's idiv raises SIGFPE
// on MIN / -1, MIN % -1 and a zero divisor).  The results chosen are NumPy's
// on x86-64; they are MXNet 1.9.1's too, except where MXNet crashes or
// computes integers through floating point (int64 mod and abs in double,
// squares and powers through float, out of range giving MIN):
//   - +, -, *, negation, abs and square wrap modulo 2^bits:
//     -MIN == abs(MIN) == MIN, MAX + 1 == MIN.
//   - a / b truncates toward zero (C's and MXNet's operator /), and wraps:
//     MIN / -1 == MIN (NumPy's); a / 0 == 0 (this project's rule, NumPy's
//     floor_divide; MXNet 1.9.1 dies of SIGFPE on both).
//   - a % b has the divisor's sign (Python's and MXNet's mod): MIN % -1 == 0,
//     a % 0 == 0 (MXNet 1.9.1 gives both).
//   - a ** b is exact modulo 2^bits for b >= 0 (NumPy's); for b < 0 it is
//     1 / a ** -b truncated: 1 for a == 1, -1 or 1 for a == -1, else 0, and
//     0 ** -n == 0 as a / 0 == 0 (NumPy raises for b < 0).
//   - a float becomes an integer by truncation toward zero; NaN, +-inf and
//     values outside int32 (int64 for an int64 result) give that type's MIN,
//     and int8 / uint8 take the int32 value modulo 256.  That is x86-64's
//     conversion (cvttss2si's "integer indefinite"), hence what NumPy's
//     astype and MXNet 1.9.1's Cast give; CUDA's own would saturate.
#ifndef MX_OPS_INT_ARITH_H_
#define MX_OPS_INT_ARITH_H_

#include <cstdint>
#include <limits>
#include <type_traits>

#include "dtype.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mxop {

template <typename A> constexpr bool is_int_v = std::is_integral<A>::value;
template <typename A>
constexpr bool is_float_v = std::is_floating_point<A>::value || std::is_same<A, half_t>::value;

// The unsigned type integer A computes in (8-bit ones as unsigned int, so
// that a product cannot overflow the int they would promote to).
template <typename A>
using uint_of = typename std::common_type<typename std::make_unsigned<A>::type, unsigned>::type;

// --- wrap-around +, -, *, negation, abs (floats: the plain operations) -------------
template <typename A> static inline A wrap_add(A a, A b) {
  if constexpr (is_int_v<A>) return A(uint_of<A>(a) + uint_of<A>(b));
  else return A(a + b);
}
template <typename A> static inline A wrap_sub(A a, A b) {
  if constexpr (is_int_v<A>) return A(uint_of<A>(a) - uint_of<A>(b));
  else return A(a - b);
}
template <typename A> static inline A wrap_mul(A a, A b) {
  if constexpr (is_int_v<A>) return A(uint_of<A>(a) * uint_of<A>(b));
  else return A(a * b);
}
template <typename A> static inline A wrap_neg(A a) {
  if constexpr (is_int_v<A>) return A(uint_of<A>(0) - uint_of<A>(a));
  else return A(-a);
}
template <typename A> static inline A wrap_abs(A a) { return a < A(0) ? wrap_neg(a) : a; }

// --- float -> integer ------------------------------------------------------------
// x truncated into I (int32_t or int64_t), or I's MIN where it does not fit.
// The conversion always runs on an in-range value and the result is
// selected after, so the loops over it stay branch-free and vectorise.
// Into int64 on x86-64 the rule is the instruction's own (cvttsd2si), which
// no vector instruction before AVX-512 has: one instruction, not three.
template <typename I, typename F> static inline I float_to_int(F x) {
#if defined(__x86_64__) && defined(__SSE2__)
  if constexpr (sizeof(I) == 8 && std::is_same<F, double>::value)
    return _mm_cvttsd_si64(_mm_set_sd(x));
  if constexpr (sizeof(I) == 8 && std::is_same<F, float>::value)
    return _mm_cvttss_si64(_mm_set_ss(x));
#endif
  constexpr F lo = F(std::numeric_limits<I>::min());   // -2^31 or -2^63: exact
  const bool fits = x >= lo && x < -lo;                  // false for NaN
  const I v = I(fits ? x : F(0));
  return fits ? v : std::numeric_limits<I>::min();
}

// Any dtype to any dtype: C's conversion, but x86-64's rule (above) for a
// float into an integer.  float16 goes through float.
template <typename D, typename S> static inline D convert(S x) {
  if constexpr (is_int_v<D> && is_float_v<S>) {
    typedef typename std::conditional<std::is_same<S, double>::value, double, float>::type F;
    if constexpr (sizeof(D) == 8) return D(float_to_int<int64_t>(F(x)));
    else return D(float_to_int<int32_t>(F(x)));   // int8 / uint8: modulo 256
  } else {
    return D(x);
  }
}

// --- division, modulo, power -----------------------------------------------------
// a / b truncated toward zero, for b != 0, wrapping MIN / -1 to MIN.
// Integers of up to 32 bits divide in double, which is exact: |a / b| <
// 2^31, so its rounding error (below 2^-22 / |b|) cannot reach the next
// integer (at least 1 / |b| away); and it vectorises, where integer
// division does not (x86 has no vector integer divide).  MIN / -1 = 2^31
// converts to MIN.
template <typename A> static inline A trunc_div(A a, A b) {
  if constexpr (sizeof(A) <= 4) return A(float_to_int<int32_t>(double(a) / double(b)));
  else if constexpr (std::is_signed<A>::value) return b == A(-1) ? wrap_neg(a) : A(a / b);
  else return A(a / b);
}

// b, or 1 for b == 0, as arithmetic: GCC turns a select here into a branch
// around the division and then cannot vectorise the loop.
template <typename A> static inline A nonzero(A b) { return A(b + A(b == A(0))); }

template <typename A> static inline A int_div(A a, A b) {
  const A q = trunc_div(a, nonzero(b));
  return b == A(0) ? A(0) : q;
}

template <typename A> static inline A int_mod(A a, A b) {
  const A d = nonzero(b);
  A r = wrap_sub(a, wrap_mul(trunc_div(a, d), d));   // C's a % d; MIN % -1 == 0
  if (r != A(0) && ((r < A(0)) != (d < A(0)))) r = A(r + d);   // no overflow: opposite signs
  return b == A(0) ? A(0) : r;
}

template <typename A> static inline A int_pow(A a, A b) {
  if constexpr (std::is_signed<A>::value) {
    if (b < A(0)) {
      if (a == A(1)) return A(1);
      if (a == A(-1)) return (b & A(1)) ? A(-1) : A(1);
      return A(0);
    }
  }
  uint64_t r = 1, x = uint64_t(a), e = uint64_t(b);   // modulo 2^64, then 2^bits
  for (; e; e >>= 1) {
    if (e & 1) r *= x;
    x *= x;
  }
  return A(r);
}

}  // namespace mxop
#endif  // MX_OPS_INT_ARITH_H_
