// pick (choose_element_0index), batch_take, their backward and
// fill_element_0index: one element per row of an axis, chosen by an index
// array of any dtype (C-cast to int64 as in index_cpu.h, then bounded by the
// mode).  Rows split across workers; every OpReqType is honoured.
#ifndef MX_OPS_PICK_CPU_H_
#define MX_OPS_PICK_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"
#include "team.h"

namespace mxop {

// Packed by mx_ops.ops.index.pick: the normalized axis of the data and the
// mode (0 clip, 1 wrap; index_cpu.h's TakeMode numbers).
struct PickParam { int64_t axis; int64_t mode; };

static inline int64_t pick_col(int64_t j, int64_t n, int64_t mode) {
  if (mode == 1) { j %= n; return j < 0 ? j + n : j; }
  return j < 0 ? 0 : (j >= n ? n - 1 : j);
}

// (outer, n, inner) of a shape around axis.
static inline void pick_dims(const MXTBlob &t, int64_t axis, int64_t *outer, int64_t *n,
                             int64_t *inner) {
  *outer = 1; *inner = 1; *n = t.shape[axis];
  for (int64_t d = 0; d < axis; ++d) *outer *= t.shape[d];
  for (int64_t d = axis + 1; d < t.ndim; ++d) *inner *= t.shape[d];
}

// out[r] for r in [begin, end), r = o * inner + e: data[o, col(index[r]), e].
// Plain arguments rather than a lambda's captures: they stay in registers
// instead of being reloaded after every store, which keeps the loop short
// enough for many misses to be in flight.
template <typename I, typename T>
static void pick_elements(const T *src, const I *idx, T *dst, int64_t n, int64_t inner,
                          int64_t mode, bool add, int64_t begin, int64_t end) {
  if (inner == 1 && !add) {            // along the last axis: one row per element
    const T *row = src + begin * n;
    for (int64_t r = begin; r < end; ++r, row += n)
      dst[r] = row[pick_col(convert<int64_t>(idx[r]), n, mode)];
    return;
  }
  int64_t o = begin / inner, e = begin - o * inner;
  for (int64_t r = begin; r < end; ++r) {
    const T v = src[(o * n + pick_col(convert<int64_t>(idx[r]), n, mode)) * inner + e];
    dst[r] = add ? wrap_add(dst[r], v) : v;
    if (++e == inner) { e = 0; ++o; }
  }
}

template <typename I, typename T>
static void pick_loop(MXOpCall *c) {
  const PickParam *p = static_cast<const PickParam *>(c->params);
  int64_t outer, n, inner;
  pick_dims(c->inputs[0], p->axis, &outer, &n, &inner);
  const T *src = static_cast<const T *>(c->inputs[0].dptr);
  const I *idx = static_cast<const I *>(c->inputs[1].dptr);
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t mode = p->mode;
  // Elements picked from rows longer than a cache line are a cache miss
  // each: count a line's worth of element-visits for every one, so a large
  // pick splits across the cores as a streaming loop of that size would.
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  const int64_t cost = n * inner < kLine ? n * inner : kLine;
  team_for_cost(outer * inner, cost > 1 ? cost : 1, [&](int64_t begin, int64_t end) {
    pick_elements(src, idx, dst, n, inner, mode, add, begin, end);
  });
}

static int index_pick(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL || mx_tblob_size(&c->outputs[0]) == 0) return 0;
  MX_TYPE_SWITCH(c->inputs[1].dtype, I,
    MX_TYPE_SWITCH(c->inputs[0].dtype, T, (pick_loop<I, T>(c))))
  return 0;
}

// _backward_pick(ograd, index, data): zeros of the data's shape (unless req
// is 'add') with each ograd added at the element it picked.  Each (o, e)
// owns its own column of the output, so rows split without races.
template <typename I, typename T>
static void pick_grad_loop(MXOpCall *c) {
  const PickParam *p = static_cast<const PickParam *>(c->params);
  int64_t outer, n, inner;
  pick_dims(c->outputs[0], p->axis, &outer, &n, &inner);
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  const I *idx = static_cast<const I *>(c->inputs[1].dptr);
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t mode = p->mode;
  parallel_for_cost(outer, n * inner, [&](int64_t begin, int64_t end) {
    if (!add)
      std::memset(dst + begin * n * inner, 0, size_t((end - begin) * n * inner) * sizeof(T));
    for (int64_t o = begin; o < end; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        const int64_t r = o * inner + e;
        T *d = dst + (o * n + pick_col(convert<int64_t>(idx[r]), n, mode)) * inner + e;
        *d = wrap_add(*d, g[r]);
      }
  });
}

static int index_pick_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL || mx_tblob_size(&c->outputs[0]) == 0) return 0;
  MX_TYPE_SWITCH(c->inputs[1].dtype, I,
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, (pick_grad_loop<I, T>(c))))
  return 0;
}

// fill_element_0index(lhs, mhs, rhs): lhs (rows, n) with element
// int(rhs[i]) of row i replaced by mhs[i]; an index outside [0, n) changes
// nothing (MXNet's mat_fill_row_element compares every column with it).
template <typename I, typename T>
static void fill_loop(MXOpCall *c) {
  const int64_t rows = c->inputs[0].shape[0];
  const int64_t n = rows ? mx_tblob_size(&c->inputs[0]) / rows : 0;
  const T *src = static_cast<const T *>(c->inputs[0].dptr);
  const T *val = static_cast<const T *>(c->inputs[1].dptr);
  const I *idx = static_cast<const I *>(c->inputs[2].dptr);
  T *dst = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(rows, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t j = convert<int64_t>(idx[i]);
      const T *s = src + i * n;
      T *d = dst + i * n;
      for (int64_t k = 0; k < n; ++k) {
        const T v = k == j ? val[i] : s[k];
        d[k] = add ? wrap_add(d[k], v) : v;
      }
    }
  });
}

static int index_fill_element_0index(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL || mx_tblob_size(&c->outputs[0]) == 0) return 0;
  MX_TYPE_SWITCH(c->inputs[2].dtype, I,
    MX_TYPE_SWITCH(c->inputs[0].dtype, T, (fill_loop<I, T>(c))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_PICK_CPU_H_
