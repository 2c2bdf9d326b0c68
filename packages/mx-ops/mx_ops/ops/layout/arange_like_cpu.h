// contrib arange_like: element i is start + (i / repeat) * step with start
// and step first converted to the data's dtype (MXNet computes in DType, so
// an int32 output of start=1.5, step=0.5 is all 1), then one multiply-add.
#ifndef MX_OPS_ARANGE_LIKE_CPU_H_
#define MX_OPS_ARANGE_LIKE_CPU_H_

#include <cstdint>
#include <type_traits>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.layout.arange_like.
struct ArangeLikeParam { double start, step; int64_t repeat; };

template <typename T>
static void arange_like_loop(MXOpCall *c, const ArangeLikeParam *p) {
  typedef typename std::conditional<std::is_same<T, half_t>::value, float, T>::type A;
  const A start = A(convert<T>(p->start)), step = A(convert<T>(p->step));
  const int64_t repeat = p->repeat;
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for(mx_tblob_size(&c->outputs[0]), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T v = T(start + A(i / repeat) * step);
      out[i] = add ? wrap_add(out[i], v) : v;
    }
  });
}

static int arange_like(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ArangeLikeParam *p = static_cast<const ArangeLikeParam *>(c->params);
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, arange_like_loop<T>(c, p))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ARANGE_LIKE_CPU_H_
