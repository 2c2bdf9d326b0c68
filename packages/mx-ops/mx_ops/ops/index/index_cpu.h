// take and one_hot: kernels driven by an index array of any dtype.
// An index is converted as MXNet does, by a C cast to int64 (floats
// truncate toward zero; NaN and values out of range give INT64_MIN, the
// x86-64 result, by int_arith.h's rule), then bounded by the mode.  Every
// OpReqType is honoured; req 'add' wraps integers.
#ifndef MX_OPS_INDEX_CPU_H_
#define MX_OPS_INDEX_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"
#include "team.h"

namespace mxop {

enum TakeMode { TAKE_CLIP = 0, TAKE_WRAP = 1, TAKE_RAISE = 2 };

// Packed by mx_ops.ops.index.index: the normalized axis of `a` and the mode.
struct TakeParam { int64_t axis; int64_t mode; };

// The row of an axis of n entries that index j picks, or -1 (raise mode).
static inline int64_t take_row(int64_t j, int64_t n, int64_t mode) {
  if (mode == TAKE_WRAP) { j %= n; return j < 0 ? j + n : j; }
  if (mode == TAKE_CLIP) return j < 0 ? 0 : (j >= n ? n - 1 : j);
  return j < 0 || j >= n ? -1 : j;
}

// Rows ahead of the one being copied whose source take_rows prefetches.
constexpr int64_t kTakePrefetch = 8;

// Asks for the first lines of a row (a long row's later lines follow the
// hardware prefetcher's sequential stream).
static inline void prefetch_row(const void *row, size_t bytes) {
  const char *b = static_cast<const char *>(row);
  const size_t n = bytes < 256 ? bytes : 256;
  for (size_t i = 0; i < n; i += 64) __builtin_prefetch(b + i);
}

// Output rows [begin, end) of take: row r = o * nidx + k is row idx[k] of
// the outer block o of `src`.  Plain arguments rather than a lambda's
// captures: they stay in registers instead of being reloaded after every
// store, which keeps the loop short enough for many misses to be in flight.
template <typename I, typename T>
static void take_rows(const T *src, const I *idx, T *dst, int64_t n, int64_t nidx,
                      int64_t inner, int64_t mode, bool add, int64_t begin, int64_t end) {
  int64_t o = begin / nidx, k = begin - o * nidx;
  if (inner == 1 && !add) {            // single elements: no memcpy call per element
    for (int64_t r = begin; r < end; ++r) {
      dst[r] = src[o * n + take_row(convert<int64_t>(idx[k]), n, mode)];
      if (++k == nidx) { k = 0; ++o; }
    }
    return;
  }
  const size_t row_bytes = size_t(inner) * sizeof(T);
  const bool prefetch = row_bytes >= 64;
  for (int64_t r = begin; r < end; ++r) {
    // The source row of a later index is requested now, so that several
    // random rows are in flight at once instead of one miss at a time
    // (the copy of a row of whole lines does not overlap them by itself).
    if (prefetch && k + kTakePrefetch < nidx)
      prefetch_row(src + (o * n + take_row(convert<int64_t>(idx[k + kTakePrefetch]), n, mode)) *
                             inner, row_bytes);
    const T *s = src + (o * n + take_row(convert<int64_t>(idx[k]), n, mode)) * inner;
    T *d = dst + r * inner;
    if (add) for (int64_t i = 0; i < inner; ++i) d[i] = wrap_add(d[i], s[i]);
    else std::memcpy(d, s, row_bytes);
    if (++k == nidx) { k = 0; ++o; }
  }
}

template <typename I, typename T>
static int take_loop(MXOpCall *c) {
  const TakeParam *p = static_cast<const TakeParam *>(c->params);
  const MXTBlob &a = c->inputs[0];
  const I *idx = static_cast<const I *>(c->inputs[1].dptr);
  const int64_t nidx = mx_tblob_size(&c->inputs[1]);
  const int64_t n = a.shape[p->axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < p->axis; ++d) outer *= a.shape[d];
  for (int64_t d = p->axis + 1; d < a.ndim; ++d) inner *= a.shape[d];
  // Raise mode checks every index before writing anything, even when the
  // result is empty (NumPy's x[..., [5], :0] raises too).
  if (p->mode == TAKE_RAISE)
    for (int64_t k = 0; k < nidx; ++k)
      if (take_row(convert<int64_t>(idx[k]), n, TAKE_RAISE) < 0) {
        c->error = "argument 'indices' holds an index out of range of the axis (mode='raise')";
        return -1;
      }
  if (outer * nidx * inner == 0) return 0;
  const T *src = static_cast<const T *>(a.dptr);
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t mode = p->mode;
  // Output rows are independent: split them across the cores (a gather of
  // many rows is memory-bound, and one core cannot saturate the bus), on
  // the module's team: every engine worker calling shares its threads.
  team_for_cost(outer * nidx, inner, [&](int64_t begin, int64_t end) {
    take_rows(src, idx, dst, n, nidx, inner, mode, add, begin, end);
  });
  return 0;
}

static int index_take(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  int rc = 0;
  MX_TYPE_SWITCH(c->inputs[1].dtype, I,
    MX_TYPE_SWITCH(c->inputs[0].dtype, T, rc = (take_loop<I, T>(c))))
  return rc;
}

// _backward_take(ograd, indices, a): a's gradient.  Every index's rows of
// the output gradient are added to the row of `a` it picked (the mode bounds
// it again, so duplicates and clipped or wrapped indices accumulate); write
// zeroes the output first.  Inputs: ograd (outer, nidx, inner), indices,
// and `a` for nothing but the shapes the packer read; the output is a's
// shape.  Raise mode needs no check: the forward raised already.
template <typename I, typename T>
static void take_grad_loop(MXOpCall *c) {
  const TakeParam *p = static_cast<const TakeParam *>(c->params);
  const MXTBlob &out = c->outputs[0];
  const I *idx = static_cast<const I *>(c->inputs[1].dptr);
  const int64_t nidx = mx_tblob_size(&c->inputs[1]);
  const int64_t n = out.shape[p->axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < p->axis; ++d) outer *= out.shape[d];
  for (int64_t d = p->axis + 1; d < out.ndim; ++d) inner *= out.shape[d];
  T *dst = static_cast<T *>(out.dptr);
  if (c->req[0] != MX_REQ_ADD)
    std::memset(dst, 0, size_t(mx_tblob_size(&out)) * sizeof(T));
  if (outer * nidx * inner == 0) return;
  const int64_t mode = p->mode == TAKE_RAISE ? TAKE_CLIP : p->mode;
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < nidx; ++k) {
      T *d = dst + (o * n + take_row(convert<int64_t>(idx[k]), n, mode)) * inner;
      const T *s = g + (o * nidx + k) * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] = wrap_add(d[i], s[i]);
    }
}

static int index_take_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[1].dtype, I,
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, (take_grad_loop<I, T>(c))))
  return 0;
}

// Packed by mx_ops.ops.index.index for one_hot.
struct OneHotParam { int64_t depth; double on_value; double off_value; };

template <typename I, typename T>
static void one_hot_loop(const MXOpCall *c) {
  const OneHotParam *p = static_cast<const OneHotParam *>(c->params);
  const I *idx = static_cast<const I *>(c->inputs[0].dptr);
  const int64_t nidx = mx_tblob_size(&c->inputs[0]), depth = p->depth;
  const T on = convert<T>(p->on_value), off = convert<T>(p->off_value);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  for (int64_t k = 0; k < nidx; ++k) {
    const int64_t j = convert<int64_t>(idx[k]);   // out of [0, depth): all off
    T *row = out + k * depth;
    for (int64_t i = 0; i < depth; ++i) {
      const T v = i == j ? on : off;
      row[i] = add ? wrap_add(row[i], v) : v;
    }
  }
}

static int index_one_hot(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, I,
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, (one_hot_loop<I, T>(c))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_INDEX_CPU_H_
