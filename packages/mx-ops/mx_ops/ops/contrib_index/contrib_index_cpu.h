// _contrib_index_copy (and its backward) and _contrib_index_array.
//
// index_copy(old, index, new): old with row index[i] (axis 0) replaced by
// row i of new, the last i winning where indices repeat.  A row table
// (the row of new that each output row comes from, or -1: old's) makes it
// one pass over the output rows, split across the workers, for every req.
// Its backward gives old the output gradient with the replaced rows
// zeroed, and new the gradient rows its rows went to.  Indices are C-cast
// to int64 (floats truncate) and must lie in [0, rows): MXNet 1.9.1
// writes out of bounds there, here the call fails before writing.
//
// index_array(data, axes): int64, data's shape plus one axis holding each
// element's coordinates along `axes`.  req 'add' wraps integers.
#ifndef MX_OPS_CONTRIB_INDEX_CPU_H_
#define MX_OPS_CONTRIB_INDEX_CPU_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// The indices, C-cast to int64, and the row table: the last i with
// to[i] == r for each of `rows` rows, or -1.  False (with c->error) when
// an index is out of range.
struct IndexRows { std::vector<int64_t> to, src; };

static bool index_rows(MXOpCall *c, const MXTBlob &index, int64_t rows, IndexRows *t) {
  const int64_t n = mx_tblob_size(&index);
  t->to.resize(size_t(n));
  MX_TYPE_SWITCH(index.dtype, I, {
    const I *idx = static_cast<const I *>(index.dptr);
    for (int64_t i = 0; i < n; ++i) t->to[i] = convert<int64_t>(idx[i]);
  })
  t->src.assign(size_t(rows), -1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = t->to[i];
    if (r < 0 || r >= rows) {
      c->error = "argument 'index_vector' holds an index out of range of the rows of "
                 "'old_tensor'";
      return false;
    }
    t->src[r] = i;
  }
  return true;
}

// One output row: a copy of `s` (or `s` added, wrapping integers).
template <typename T>
static inline void put_row(T *d, const T *s, int64_t inner, bool add) {
  if (add) for (int64_t e = 0; e < inner; ++e) d[e] = wrap_add(d[e], s[e]);
  else std::memcpy(d, s, size_t(inner) * sizeof(T));
}

template <typename T>
static void index_copy_loop(const MXOpCall *c, const std::vector<int64_t> &src) {
  const MXTBlob &o = c->outputs[0];
  const int64_t rows = o.shape[0], inner = rows ? mx_tblob_size(&o) / rows : 0;
  const T *old = static_cast<const T *>(c->inputs[0].dptr);
  const T *upd = static_cast<const T *>(c->inputs[2].dptr);
  T *out = static_cast<T *>(o.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(rows, inner, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T *s = src[r] < 0 ? old + r * inner : upd + src[r] * inner;
      if (s != out + r * inner || add) put_row(out + r * inner, s, inner, add);
    }
  });
}

static int contrib_index_copy(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  IndexRows t;
  if (!index_rows(c, c->inputs[1], c->outputs[0].shape[0], &t)) return -1;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, index_copy_loop<T>(c, t.src))
  return 0;
}

// _contrib_backward_index_copy(ograd, index): (old's gradient, new's).
template <typename T>
static void index_copy_grad_loop(const MXOpCall *c, const IndexRows &t) {
  const std::vector<int64_t> &src = t.src, &to = t.to;
  const MXTBlob &g = c->inputs[0];
  const int64_t rows = g.shape[0], inner = rows ? mx_tblob_size(&g) / rows : 0;
  const T *og = static_cast<const T *>(g.dptr);
  if (c->req[0] != MX_REQ_NULL) {
    T *d_old = static_cast<T *>(c->outputs[0].dptr);
    const bool add = c->req[0] == MX_REQ_ADD;
    parallel_for_cost(rows, inner, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        T *d = d_old + r * inner;
        if (src[r] < 0) {
          if (d != og + r * inner || add) put_row(d, og + r * inner, inner, add);
        } else if (!add) {
          std::memset(d, 0, size_t(inner) * sizeof(T));
        }
      }
    });
  }
  if (c->req[1] != MX_REQ_NULL) {
    T *d_new = static_cast<T *>(c->outputs[1].dptr);
    const bool add = c->req[1] == MX_REQ_ADD;
    const int64_t n = c->outputs[1].shape[0];
    parallel_for_cost(n, inner, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) put_row(d_new + i * inner, og + to[i] * inner, inner, add);
    });
  }
}

static int contrib_index_copy_backward(MXOpCall *c) {
  IndexRows t;
  if (!index_rows(c, c->inputs[1], c->inputs[0].shape[0], &t)) return -1;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, index_copy_grad_loop<T>(c, t))
  return 0;
}

// Packed by mx_ops.ops.contrib_index.contrib_index: int64 ndim, the data's
// shape, int64 naxes, then the (normalized) axes.
static int contrib_index_array(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const int64_t *p = static_cast<const int64_t *>(c->params);
  const int64_t nd = p[0], *shape = p + 1, naxes = p[1 + nd], *axes = p + 2 + nd;
  int64_t stride[MX_MAX_DIM];
  int64_t total = 1;
  for (int64_t d = nd - 1; d >= 0; --d) { stride[d] = total; total *= shape[d]; }
  int64_t *out = static_cast<int64_t *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(total, naxes, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t j = 0; j < naxes; ++j) {
        const int64_t v = i / stride[axes[j]] % shape[axes[j]];
        int64_t &o = out[i * naxes + j];
        o = add ? wrap_add(o, v) : v;
      }
  });
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_CONTRIB_INDEX_CPU_H_
