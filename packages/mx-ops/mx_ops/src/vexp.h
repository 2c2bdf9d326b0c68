// exp, tanh and sigmoid over arrays, and a softmax's sum of exps,
// vectorized (vexp_isa.h compiled per instruction set, picked by isa.h's
// cpu_isa()).  std::exp and std::tanh are a scalar call per element; these
// run 16 floats per instruction with AVX-512.  exp matches std::exp within
// 1 ulp (float) / 2 ulp (double), tanh and sigmoid the correctly rounded
// values within 2 and 3 ulp, inf, -inf, nan and subnormal results included
// (tests/test_nn_basic.py checks them against NumPy).
#ifndef MX_OPS_VEXP_H_
#define MX_OPS_VEXP_H_

#include <cstdint>
#include <type_traits>

#include "isa.h"

#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#pragma GCC optimize("no-trapping-math")
#define MX_VEXP_NS vexp_avx512
#include "vexp_isa.h"
#undef MX_VEXP_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("no-trapping-math")
#define MX_VEXP_NS vexp_avx2
#include "vexp_isa.h"
#undef MX_VEXP_NS
#pragma GCC pop_options
#endif

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#define MX_VEXP_NS vexp_generic
#include "vexp_isa.h"
#undef MX_VEXP_NS
#pragma GCC pop_options

namespace mxop {

// y[i] = exp(x[i]) for float or double (y may be x).
template <typename A>
static inline void vexp(const A *x, A *y, int64_t n) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return vexp_avx512::exp_n(x, y, n);
    case ISA_AVX2: return vexp_avx2::exp_n(x, y, n);
    default: break;
  }
#endif
  vexp_generic::exp_n(x, y, n);
}

// y[i] = exp((x[i] - shift) * scale), returning the sum of y, where every
// exponent is <= 0: the shift is x's maximum for scale > 0, its minimum for
// scale < 0 (a softmax's numerators and denominator).  exp1's bits down to
// -126 ln2 and 0 below it (exp_below1; with exp1, a (1024, 1000) float32
// softmax forward took 0.77 ms on one thread of the AVX-512 EPYC VM, now
// 0.60).
template <typename A>
static inline A vexp_shift_sum_below(const A *x, A *y, int64_t n, A shift, A scale) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return vexp_avx512::exp_shift_sum_below(x, y, n, shift, scale);
    case ISA_AVX2: return vexp_avx2::exp_shift_sum_below(x, y, n, shift, scale);
    default: break;
  }
#endif
  return vexp_generic::exp_shift_sum_below(x, y, n, shift, scale);
}

// The sum of exp((x[i] - shift) * scale) in the compute type A (a softmax's
// denominator; the terms themselves are not kept, see exp_term1), where
// the shift is x's maximum for scale > 0 and its minimum for scale < 0, so
// that every exponent is <= 0 and one is 0.  T is A, or float16 with A
// float: widened 256 at a time into a stack buffer, the chunks' sums added
// in order (softmax_ce and log_softmax summed such chunks before: the same
// bits).
template <typename T, typename A>
static inline A vsum_exp_below(const T *x, int64_t n, A shift, A scale) {
  if constexpr (!std::is_same_v<T, A>) {
    constexpr int64_t kChunk = 256;
    alignas(64) A buf[kChunk];
    A s = A(0);
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      const int64_t m = n - j0 < kChunk ? n - j0 : kChunk;
      for (int64_t j = 0; j < m; ++j) buf[j] = A(x[j0 + j]);
      s += vsum_exp_below(buf, m, shift, scale);
    }
    return s;
  } else {
#if MX_MULTI_ISA
    switch (cpu_isa()) {
      case ISA_AVX512: return vexp_avx512::sum_exp_below(x, n, shift, scale);
      case ISA_AVX2: return vexp_avx2::sum_exp_below(x, n, shift, scale);
      default: break;
    }
#endif
    return vexp_generic::sum_exp_below(x, n, shift, scale);
  }
}

// sum[l] += exp(t[l]) for l < n, where every t[l] <= 0 and each sum[l]
// gets an exp(0) = 1 term (the exponents, already shifted and scaled, of
// rows walked side by side; not kept).
template <typename A>
static inline void vacc_exp_below(const A *t, A *sum, int64_t n) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return vexp_avx512::acc_exp_below(t, sum, n);
    case ISA_AVX2: return vexp_avx2::acc_exp_below(t, sum, n);
    default: break;
  }
#endif
  vexp_generic::acc_exp_below(t, sum, n);
}

// y[i] = tanh(x[i]) for float or double (y may be x).
template <typename A>
static inline void vtanh(const A *x, A *y, int64_t n) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return vexp_avx512::tanh_n(x, y, n);
    case ISA_AVX2: return vexp_avx2::tanh_n(x, y, n);
    default: break;
  }
#endif
  vexp_generic::tanh_n(x, y, n);
}

// y[i] = 1 / (1 + exp(-x[i])) for float or double (y may be x).
template <typename A>
static inline void vsigmoid(const A *x, A *y, int64_t n) {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return vexp_avx512::sigmoid_n(x, y, n);
    case ISA_AVX2: return vexp_avx2::sigmoid_n(x, y, n);
    default: break;
  }
#endif
  vexp_generic::sigmoid_n(x, y, n);
}

}  // namespace mxop
#endif  // MX_OPS_VEXP_H_
