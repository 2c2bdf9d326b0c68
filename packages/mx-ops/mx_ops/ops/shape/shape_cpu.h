// The strided gather behind transpose, slice, slice_axis and broadcast_to:
// out[i0, .., ik] = in[offset + sum_d i_d * strides[d]] in row-major order
// over the output.  Strides are in elements and may be 0 (broadcast) or
// negative (a slice with a negative step); the innermost output axis runs
// as a flat loop.
#ifndef MX_OPS_SHAPE_CPU_H_
#define MX_OPS_SHAPE_CPU_H_

#include <cstdint>
#include <type_traits>

#include "dtype.h"
#include "int_arith.h"

namespace mxop {

// Packed by mx_ops.ops.shape.shape from the input shape: one stride per output axis.
struct GatherParam { int64_t offset; int64_t strides[MX_MAX_DIM]; };
// The gather of _broadcast_reduce_like, whose values are also multiplied
// by `scale` (1 / the number of reduced elements for mean's gradient).
struct ScaledGatherParam { GatherParam gather; double scale; };

// out[i] = f(in[...]) for the gathered element; F maps T to T.
template <typename T, typename F>
static void gather_loop(const MXOpCall *c, const GatherParam *p, F f) {
  const MXTBlob &out = c->outputs[0];
  const T *src = static_cast<const T *>(c->inputs[0].dptr) + p->offset;
  T *dst = static_cast<T *>(out.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int nd = out.ndim;
  const int64_t n = mx_tblob_size(&out);
  if (n == 0) return;
  if (nd == 0) { dst[0] = add ? wrap_add(dst[0], f(src[0])) : f(src[0]); return; }
  int64_t idx[MX_MAX_DIM] = {0};
  const int64_t inner = out.shape[nd - 1], s = p->strides[nd - 1];
  int64_t off = 0;
  for (int64_t base = 0; base < n; base += inner) {
    T *o = dst + base;
    const T *r = src + off;
    if (add) for (int64_t i = 0; i < inner; ++i) o[i] = wrap_add(o[i], f(r[i * s]));
    else for (int64_t i = 0; i < inner; ++i) o[i] = f(r[i * s]);
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
  const GatherParam *p = static_cast<const GatherParam *>(c->params);
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, gather_loop<T>(c, p, [](T v) { return v; }))
  return 0;
}

// Floats scale in float (float16) or their own type; integers in double,
// truncated back.
static int shape_gather_scaled(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ScaledGatherParam *p = static_cast<const ScaledGatherParam *>(c->params);
  const double k = p->scale;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, {
    typedef typename std::conditional<std::is_same<T, half_t>::value || std::is_same<T, float>::value,
                                      float, double>::type A;
    const A ka = A(k);
    gather_loop<T>(c, &p->gather, [ka](T v) { return convert<T>(A(v) * ka); });
  })
  return 0;
}

// shape_array and size_array (MXNet's ShapeComputeCPU, SizeComputeCPU): the
// input's shape, or its number of elements, as int64; its data is not read.
static void write_int64(MXOpCall *c, const int64_t *values, int n) {
  int64_t *dst = static_cast<int64_t *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  for (int i = 0; i < n; ++i) dst[i] = add ? wrap_add(dst[i], values[i]) : values[i];
}

static int shape_array(MXOpCall *c) {
  if (c->req[0] != MX_REQ_NULL) write_int64(c, c->inputs[0].shape, c->inputs[0].ndim);
  return 0;
}

static int size_array(MXOpCall *c) {
  const int64_t size = mx_tblob_size(&c->inputs[0]);
  if (c->req[0] != MX_REQ_NULL) write_int64(c, &size, 1);
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SHAPE_CPU_H_
