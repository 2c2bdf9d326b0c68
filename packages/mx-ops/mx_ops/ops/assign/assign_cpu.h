// The strided scatter behind _slice_assign and _slice_assign_scalar, which
// NDArray's `a[key] = value` uses for regions that are not one contiguous
// block: out = lhs, then out[region] = rhs (or the scalar).  The region is a
// strided view of the output: out[offset + sum_d i_d * strides[d]] for i in
// the region's shape (a slice's start and step folded into element strides).
#ifndef MX_OPS_ASSIGN_CPU_H_
#define MX_OPS_ASSIGN_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"

namespace mxop {

// Packed by mx_ops.ops.assign.assign from the output shape and the slices.
struct RegionParam {
  int64_t offset;
  int64_t strides[MX_MAX_DIM];
  int64_t shape[MX_MAX_DIM];
  int64_t ndim;
};
struct ScalarRegionParam { RegionParam region; double scalar; };

// Calls row(dense, strided) for every innermost row of the region: `dense`
// is the row's first element counted in row-major order over the region,
// `strided` its element offset in the output.
template <typename F>
static inline void for_each_region_row(const RegionParam &r, F row) {
  const int nd = int(r.ndim);
  int64_t n = 1;
  for (int d = 0; d < nd; ++d) n *= r.shape[d];
  if (n == 0) return;
  if (nd == 0) { row(0, r.offset); return; }
  int64_t idx[MX_MAX_DIM] = {0};
  const int64_t inner = r.shape[nd - 1];
  int64_t off = r.offset;
  for (int64_t base = 0; base < n; base += inner) {
    row(base, off);
    for (int d = nd - 2; d >= 0; --d) {      // odometer over the outer axes
      off += r.strides[d];
      if (++idx[d] < r.shape[d]) break;
      off -= r.strides[d] * r.shape[d];
      idx[d] = 0;
    }
  }
}

// out = lhs unless they are one buffer (the usual in-place call).
static inline int assign_prepare(MXOpCall *c, const char *op) {
  if (c->req[0] == MX_REQ_ADD) {
    c->error = op;    // the caller's message: add is meaningless for an assignment
    return -1;
  }
  const MXTBlob &lhs = c->inputs[0], &out = c->outputs[0];
  if (out.dptr != lhs.dptr)
    std::memmove(out.dptr, lhs.dptr, size_t(mx_tblob_size(&out)) * mx_dtype_size(out.dtype));
  return 0;
}

template <typename T>
static void scatter_array(const MXOpCall *c) {
  const RegionParam &r = *static_cast<const RegionParam *>(c->params);
  const T *src = static_cast<const T *>(c->inputs[1].dptr);
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  const int64_t inner = r.ndim ? r.shape[r.ndim - 1] : 1, s = r.ndim ? r.strides[r.ndim - 1] : 0;
  for_each_region_row(r, [&](int64_t base, int64_t off) {
    for (int64_t i = 0; i < inner; ++i) dst[off + i * s] = src[base + i];
  });
}

template <typename T>
static void scatter_scalar(const MXOpCall *c) {
  const ScalarRegionParam &p = *static_cast<const ScalarRegionParam *>(c->params);
  const RegionParam &r = p.region;
  const T value = convert<T>(p.scalar);   // int_arith.h's rule for integers
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  const int64_t inner = r.ndim ? r.shape[r.ndim - 1] : 1, s = r.ndim ? r.strides[r.ndim - 1] : 0;
  for_each_region_row(r, [&](int64_t, int64_t off) {
    for (int64_t i = 0; i < inner; ++i) dst[off + i * s] = value;
  });
}

static int slice_assign(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  if (assign_prepare(c, "req 'add' is not supported by an assignment") != 0) return -1;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, scatter_array<T>(c))
  return 0;
}

static int slice_assign_scalar(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  if (assign_prepare(c, "req 'add' is not supported by an assignment") != 0) return -1;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, scatter_scalar<T>(c))
  return 0;
}

// _backward_slice and _backward_slice_axis: the gradient of a slice is the
// output gradient scattered into the region of zeros of the input's shape.
// write zeroes the output first; add accumulates into the region only.
template <typename T>
static void scatter_grad(const MXOpCall *c, bool add) {
  const RegionParam &r = *static_cast<const RegionParam *>(c->params);
  const T *src = static_cast<const T *>(c->inputs[0].dptr);
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  if (!add) std::memset(dst, 0, size_t(mx_tblob_size(&c->outputs[0])) * sizeof(T));
  const int64_t inner = r.ndim ? r.shape[r.ndim - 1] : 1, s = r.ndim ? r.strides[r.ndim - 1] : 0;
  for_each_region_row(r, [&](int64_t base, int64_t off) {
    if (add)
      for (int64_t i = 0; i < inner; ++i)
        dst[off + i * s] = wrap_add(dst[off + i * s], src[base + i]);
    else for (int64_t i = 0; i < inner; ++i) dst[off + i * s] = src[base + i];
  });
}

static int slice_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, scatter_grad<T>(c, c->req[0] == MX_REQ_ADD))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ASSIGN_CPU_H_
