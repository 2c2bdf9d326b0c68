// transpose: out[i0..in] = in[permuted index], a strided gather over the
// output in row-major order (the innermost output axis runs as a flat loop).
#ifndef MX_OPS_SHAPE_CPU_H_
#define MX_OPS_SHAPE_CPU_H_

#include <cstdint>

#include "mx_ops/tblob.h"

namespace mxop {

typedef _Float16 half_t;

// The permutation: output axis d reads input axis axes[d].  ndim < 0 means
// "reverse the axes"; negative axes count from the end (the parameters are
// packed without knowing the input's rank).
struct TransposeParam { int64_t ndim; int64_t axes[MX_MAX_DIM]; };

template <typename T>
static void transpose_loop(const MXOpCall *c) {
  const MXTBlob &in = c->inputs[0], &out = c->outputs[0];
  const TransposeParam *p = static_cast<const TransposeParam *>(c->params);
  const T *src = static_cast<const T *>(in.dptr);
  T *dst = static_cast<T *>(out.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int nd = out.ndim;
  const int64_t n = mx_tblob_size(&out);
  if (n == 0) return;
  if (nd == 0) { dst[0] = add ? T(dst[0] + src[0]) : src[0]; return; }
  int64_t in_stride[MX_MAX_DIM], stride[MX_MAX_DIM], idx[MX_MAX_DIM];
  int64_t k = 1;
  for (int d = in.ndim - 1; d >= 0; --d) { in_stride[d] = k; k *= in.shape[d]; }
  for (int d = 0; d < nd; ++d) {
    int64_t a = p->ndim < 0 ? nd - 1 - d : p->axes[d];
    if (a < 0) a += nd;
    stride[d] = in_stride[a];
    idx[d] = 0;
  }
  const int64_t inner = out.shape[nd - 1], s = stride[nd - 1];
  int64_t off = 0;
  for (int64_t base = 0; base < n; base += inner) {
    T *o = dst + base;
    const T *r = src + off;
    if (add) for (int64_t i = 0; i < inner; ++i) o[i] = T(o[i] + r[i * s]);
    else for (int64_t i = 0; i < inner; ++i) o[i] = r[i * s];
    for (int d = nd - 2; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < out.shape[d]) break;
      off -= stride[d] * out.shape[d];
      idx[d] = 0;
    }
  }
}

static int shape_transpose(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  switch (c->inputs[0].dtype) {
    case MX_FLOAT32: transpose_loop<float>(c); return 0;
    case MX_FLOAT64: transpose_loop<double>(c); return 0;
    case MX_FLOAT16: transpose_loop<half_t>(c); return 0;
    case MX_UINT8: transpose_loop<uint8_t>(c); return 0;
    case MX_INT8: transpose_loop<int8_t>(c); return 0;
    case MX_INT32: transpose_loop<int32_t>(c); return 0;
    case MX_INT64: transpose_loop<int64_t>(c); return 0;
  }
  c->error = "unsupported dtype";
  return -1;
}

}  // namespace mxop
#endif  // MX_OPS_SHAPE_CPU_H_
