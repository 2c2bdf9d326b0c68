// An array function of the compute type (vexp.h's vtanh, vsigmoid: float
// or double in, same out) applied to an array of any float dtype under an
// OpReqType.  The vector functions take arrays of the compute type, so
// float16 inputs, and outputs that req 'add' accumulates into, go through
// an L1-sized buffer chunk by chunk; float and double writes (and inplace,
// where y is x) go straight through.
#ifndef MX_OPS_VUNARY_H_
#define MX_OPS_VUNARY_H_

#include <cstdint>
#include <type_traits>

#include "dtype.h"

namespace mxop {

// y[i] = f(x[i]) (ADD false) or y[i] += f(x[i]) (ADD true) for i < n, with
// vf(const A *in, A *out, m) computing f over m elements (in may be out);
// A is float for float16 and T otherwise.
template <bool ADD, typename T, typename VF>
static inline void vunary_store(const T *x, T *y, int64_t n, VF vf) {
  typedef typename std::conditional<std::is_same<T, half_t>::value, float, T>::type A;
  if constexpr (!ADD && std::is_same<T, A>::value) {
    vf(x, y, n);
  } else {
    constexpr int64_t kChunk = 2048 / int64_t(sizeof(A));
    alignas(64) A buf[kChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = n - i0 < kChunk ? n - i0 : kChunk;
      const A *src = buf;
      if constexpr (std::is_same<T, A>::value) {
        src = x + i0;
      } else {
        for (int64_t k = 0; k < m; ++k) buf[k] = A(x[i0 + k]);
      }
      vf(src, buf, m);
      T *d = y + i0;
      if constexpr (ADD) {
        for (int64_t k = 0; k < m; ++k) d[k] = T(A(d[k]) + buf[k]);
      } else {
        for (int64_t k = 0; k < m; ++k) d[k] = T(buf[k]);
      }
    }
  }
}

}  // namespace mxop
#endif  // MX_OPS_VUNARY_H_
