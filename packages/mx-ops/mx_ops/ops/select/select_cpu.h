// clip and where.  clip bounds every element to [a_min, a_max]; where picks
// x where the condition is non-zero, else y; a 1-d condition picks whole
// rows (MXNet's where with a condition over the first axis).  The condition
// may have any dtype.  Every OpReqType is honoured (req 'add' wraps
// integers); clip's bounds become the dtype by int_arith.h's rule.
#ifndef MX_OPS_SELECT_CPU_H_
#define MX_OPS_SELECT_CPU_H_

#include <cstdint>

#include "dtype.h"
#include "int_arith.h"

namespace mxop {

struct ClipParam { double a_min; double a_max; };

template <typename T>
static void clip_loop(const MXOpCall *c) {
  const ClipParam *p = static_cast<const ClipParam *>(c->params);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const T lo = convert<T>(p->a_min), hi = convert<T>(p->a_max);
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  for (int64_t i = 0; i < n; ++i) {
    T v = in[i] < lo ? lo : (in[i] > hi ? hi : in[i]);
    out[i] = add ? wrap_add(out[i], v) : v;
  }
}

static int select_clip(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, clip_loop<T>(c))
  return 0;
}

template <typename C, typename T>
static void where_loop(const MXOpCall *c) {
  const C *cond = static_cast<const C *>(c->inputs[0].dptr);
  const T *x = static_cast<const T *>(c->inputs[1].dptr);
  const T *y = static_cast<const T *>(c->inputs[2].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const int64_t nc = mx_tblob_size(&c->inputs[0]);
  // A 1-d condition over the first axis chooses rows of `row` elements.
  const int64_t row = nc == n || nc == 0 ? 1 : n / nc;
  const bool add = c->req[0] == MX_REQ_ADD;
  for (int64_t i = 0; i < n; ++i) {
    T v = cond[i / row] != C(0) ? x[i] : y[i];
    out[i] = add ? wrap_add(out[i], v) : v;
  }
}

static int select_where(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, C,
    MX_TYPE_SWITCH(c->inputs[1].dtype, T, (where_loop<C, T>(c))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SELECT_CPU_H_
