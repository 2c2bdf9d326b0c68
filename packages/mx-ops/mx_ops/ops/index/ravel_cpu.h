// _ravel_multi_index and _unravel_index: between multi-indices (ndim, N)
// and flat indices (N) of an array of a given shape, in the data's dtype
// (MXNet's float outputs).  Indices are not checked: as in MXNet, ravel
// is Horner's rule, flat = int64(flat * shape[d] + index[d]), where the
// sum is in the data's type (float, double; integers wrap in int64) and
// converts back to int64 by C's truncation at every step; unravel C-casts
// the flat index to int64 and takes the remainders of C's truncating
// division along every axis but the first, which gets the rest.  Every OpReqType is honoured;
// req 'add' wraps integers.  Work is split across the workers by columns.
#ifndef MX_OPS_RAVEL_CPU_H_
#define MX_OPS_RAVEL_CPU_H_

#include <cstdint>
#include <type_traits>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.index.ravel: int64 ndim, then the shape's ndim
// dimensions (the first may be -1: it is never read).
static inline const int64_t *ravel_shape(const MXOpCall *c, int64_t *ndim) {
  const int64_t *p = static_cast<const int64_t *>(c->params);
  *ndim = p[0];
  return p + 1;
}

// int64(flat * s + x), the sum in T's arithmetic (float16: float).
template <typename T>
static inline int64_t horner_step(int64_t flat, int64_t s, T x) {
  if constexpr (is_float_v<T>) {
    typedef typename std::conditional<std::is_same<T, double>::value, double, float>::type F;
    return convert<int64_t>(F(wrap_mul(flat, s)) + F(x));
  } else {
    return wrap_add(wrap_mul(flat, s), int64_t(x));
  }
}

template <typename T>
static void ravel_loop(const MXOpCall *c) {
  int64_t nd;
  const int64_t *shape = ravel_shape(c, &nd);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(n, nd, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      int64_t flat = convert<int64_t>(in[j]);
      for (int64_t d = 1; d < nd; ++d) flat = horner_step(flat, shape[d], in[d * n + j]);
      const T v = convert<T>(flat);
      out[j] = add ? wrap_add(out[j], v) : v;
    }
  });
}

static int index_ravel(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, ravel_loop<T>(c))
  return 0;
}

template <typename T>
static void unravel_loop(const MXOpCall *c) {
  int64_t nd;
  const int64_t *shape = ravel_shape(c, &nd);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->inputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(n, nd, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      int64_t rest = convert<int64_t>(in[j]);
      for (int64_t d = nd - 1; d >= 0; --d) {
        const int64_t s = shape[d];
        const int64_t v = d == 0 ? rest : rest % s;
        if (d > 0) rest /= s;
        T &o = out[d * n + j];
        o = add ? wrap_add(o, convert<T>(v)) : convert<T>(v);
      }
    }
  });
}

static int index_unravel(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, unravel_loop<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_RAVEL_CPU_H_
