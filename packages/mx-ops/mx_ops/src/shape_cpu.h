// The strided gather behind transpose, slice, slice_axis and broadcast_to:
// out[i0, .., ik] = in[offset + sum_d i_d * strides[d]] in row-major order
// over the output.  Strides are in elements and may be 0 (broadcast) or
// negative (a slice with a negative step); the innermost output axis runs
// as a flat loop.
#ifndef MX_OPS_SHAPE_CPU_H_
#define MX_OPS_SHAPE_CPU_H_

#include <cstdint>

#include "dtype.h"

namespace mxop {

// Packed by mx_ops.shape from the input shape: one stride per output axis.
struct GatherParam { int64_t offset; int64_t strides[MX_MAX_DIM]; };

template <typename T>
static void gather_loop(const MXOpCall *c) {
  const MXTBlob &out = c->outputs[0];
  const GatherParam *p = static_cast<const GatherParam *>(c->params);
  const T *src = static_cast<const T *>(c->inputs[0].dptr) + p->offset;
  T *dst = static_cast<T *>(out.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int nd = out.ndim;
  const int64_t n = mx_tblob_size(&out);
  if (n == 0) return;
  if (nd == 0) { dst[0] = add ? T(dst[0] + src[0]) : src[0]; return; }
  int64_t idx[MX_MAX_DIM] = {0};
  const int64_t inner = out.shape[nd - 1], s = p->strides[nd - 1];
  int64_t off = 0;
  for (int64_t base = 0; base < n; base += inner) {
    T *o = dst + base;
    const T *r = src + off;
    if (add) for (int64_t i = 0; i < inner; ++i) o[i] = T(o[i] + r[i * s]);
    else for (int64_t i = 0; i < inner; ++i) o[i] = r[i * s];
    for (int d = nd - 2; d >= 0; --d) {      // odometer over the outer axes
      off += p->strides[d];
      if (++idx[d] < out.shape[d]) break;
      off -= p->strides[d] * out.shape[d];
      idx[d] = 0;
    }
  }
}

static int shape_gather(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, gather_loop<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SHAPE_CPU_H_
