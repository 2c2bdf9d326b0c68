// One instruction set's copy of add_n's accumulator passes (see
// elemwise_sum_cpu.h, which includes this file once per instruction set
// inside `#pragma GCC target` regions, with MX_SUM_NS naming the
// namespace).  No include guard on purpose.

namespace mxop {
namespace MX_SUM_NS {

// One pass of the accumulator over K inputs (K = 1..4, all read in one loop,
// so that their streams advance together as the hardware prefetchers like):
// acc[j] = in[0][i0 + j] + ... + in[K - 1][i0 + j] when FIRST, else acc[j]
// plus them, left to right.  Unused pointers alias in[0] and are not read.
template <int K, bool FIRST, typename T, typename A>
static inline void sum_group(const MXTBlob *in, int64_t i0, int64_t m, A *__restrict acc) {
  const T *__restrict a = static_cast<const T *>(in[0].dptr) + i0;
  const T *__restrict b = static_cast<const T *>(in[K > 1 ? 1 : 0].dptr) + i0;
  const T *__restrict c = static_cast<const T *>(in[K > 2 ? 2 : 0].dptr) + i0;
  const T *__restrict d = static_cast<const T *>(in[K > 3 ? 3 : 0].dptr) + i0;
  for (int64_t j = 0; j < m; ++j) {
    A s = FIRST ? A(a[j]) : wrap_add(acc[j], A(a[j]));
    if constexpr (K > 1) s = wrap_add(s, A(b[j]));
    if constexpr (K > 2) s = wrap_add(s, A(c[j]));
    if constexpr (K > 3) s = wrap_add(s, A(d[j]));
    acc[j] = s;
  }
}

template <bool FIRST, typename T, typename A>
static inline void sum_group(const MXTBlob *in, int k, int64_t i0, int64_t m, A *acc) {
  switch (k) {
    case 1: sum_group<1, FIRST, T, A>(in, i0, m, acc); break;
    case 2: sum_group<2, FIRST, T, A>(in, i0, m, acc); break;
    case 3: sum_group<3, FIRST, T, A>(in, i0, m, acc); break;
    default: sum_group<4, FIRST, T, A>(in, i0, m, acc); break;
  }
}

// acc[0, m) = in0[i0 + j] + in1[i0 + j] + ..., four inputs per pass.  The
// inputs are only read here and acc is the caller's own buffer, so the
// pointers may be __restrict even when the output is input 0.
template <typename T, typename A>
static void sum_block(const MXTBlob *in, int nin, int64_t i0, int64_t m, A *acc) {
  const int first = nin < kSumGroup ? nin : kSumGroup;
  sum_group<true, T, A>(in, first, i0, m, acc);
  for (int k = first; k < nin; k += kSumGroup)
    sum_group<false, T, A>(in + k, nin - k < kSumGroup ? nin - k : kSumGroup, i0, m, acc);
}

}  // namespace MX_SUM_NS
}  // namespace mxop
