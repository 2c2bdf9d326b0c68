// The table gather behind the layout operators (Pad, SwapAxis,
// broadcast_axis, depth_to_space, space_to_depth, repeat, tile, reverse,
// slice_like) and its adjoint, the table scatter-add of their gradients.
//
// Every one of them maps an output element to an input element whose
// offset is a SUM of one term per output axis: out[i0, .., ik] =
// in[base + t0[i0] + .. + tk[ik]], or a constant where a term is kFill
// (Pad's constant mode).  mx_ops.ops.layout.tables builds the terms.  The
// innermost axis is not looked up per element: it is packed as runs (a
// contiguous block, a broadcast value, a reversed or strided block, or a
// fill), so a row is a few memcpy/fill calls; the outer axes cost one sum
// of table entries per row.
#ifndef MX_OPS_LAYOUT_CPU_H_
#define MX_OPS_LAYOUT_CPU_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

constexpr int64_t kFill = INT64_MIN;

// The packed block (mx_ops.ops.layout.tables.pack): this header, the view
// shape (ndim int64, row-major over the output), one int64 table per view
// axis (shape[d] entries; the innermost one is read by the GPU twin only),
// then `nruns` TableRun covering the innermost axis in order.
struct TableHeader { int64_t ndim, nruns, base; double value; };
// `len` items from source offset `src` by `step` (0: broadcast); fill != 0: the constant.
struct TableRun { int64_t len, src, step, fill; };

struct Tables {
  const TableHeader *h;
  const int64_t *table[2 * MX_MAX_DIM];
  const TableRun *runs;
  int64_t shape[2 * MX_MAX_DIM];
};

static inline Tables read_tables(const void *params) {
  Tables t;
  t.h = static_cast<const TableHeader *>(params);
  const int64_t *p = reinterpret_cast<const int64_t *>(t.h + 1);
  const int64_t *shape = p;                 // the shape the tables index
  p += t.h->ndim;
  for (int64_t d = 0; d < t.h->ndim; ++d) {
    t.shape[d] = shape[d];
    t.table[d] = p;
    p += shape[d];
  }
  t.runs = reinterpret_cast<const TableRun *>(p);
  return t;
}

// The source offset of outer index idx over axes 0..nouter-1, or kFill.
static inline int64_t row_offset(const Tables &t, const int64_t *idx, int64_t nouter) {
  int64_t off = t.h->base;
  for (int64_t d = 0; d < nouter; ++d) {
    const int64_t v = t.table[d][idx[d]];
    if (v == kFill) return kFill;
    off += v;
  }
  return off;
}

// Outer index of item r (row-major over axes 0..nouter-1).
static inline void row_index(const Tables &t, int64_t r, int64_t *idx, int64_t nouter) {
  for (int64_t d = nouter - 1; d >= 0; --d) {
    idx[d] = r % t.shape[d];
    r /= t.shape[d];
  }
}

static inline void next_row(const Tables &t, int64_t *idx, int64_t nouter) {
  for (int64_t d = nouter - 1; d >= 0; --d) {
    if (++idx[d] < t.shape[d]) return;
    idx[d] = 0;
  }
}

// One output row: the runs of the innermost axis from source row `src`.
template <typename T>
static inline void gather_row(const Tables &t, const T *in, int64_t off, T *o, bool add, T fill) {
  for (int64_t k = 0; k < t.h->nruns; ++k) {
    const TableRun &r = t.runs[k];
    const int64_t n = r.len;
    if (off == kFill || r.fill) {
      if (add) for (int64_t i = 0; i < n; ++i) o[i] = wrap_add(o[i], fill);
      else std::fill(o, o + n, fill);
    } else {
      const T *s = in + off + r.src;
      if (r.step == 1) {
        if (add) for (int64_t i = 0; i < n; ++i) o[i] = wrap_add(o[i], s[i]);
        else std::memcpy(o, s, n * sizeof(T));
      } else if (r.step == 0) {
        const T v = *s;
        if (add) for (int64_t i = 0; i < n; ++i) o[i] = wrap_add(o[i], v);
        else std::fill(o, o + n, v);
      } else {
        const int64_t st = r.step;
        if (add) for (int64_t i = 0; i < n; ++i) o[i] = wrap_add(o[i], s[i * st]);
        else for (int64_t i = 0; i < n; ++i) o[i] = s[i * st];
      }
    }
    o += n;
  }
}

// Rows shorter than this (repeat's (n, r) view, tile's narrow arrays) cost
// more in the outer index upkeep than in their copy: the second-innermost
// axis then runs as a plain loop over its table.
constexpr int64_t kShortRow = 32;

// Short rows that each repeat one value (repeat's view): rows j0..j1 of the
// second-innermost axis, R copies of in[off + tm[j] + src] each; R known at
// compile time for the common repeat counts so that the copies unroll.
template <typename T, int R>
static inline void broadcast_rows(const T *in, const int64_t *tm, int64_t off, int64_t j0,
                                  int64_t j1, int64_t r, T *o, T fill) {
  const int64_t n = R ? R : r;
  for (int64_t j = j0; j < j1; ++j, o += n) {
    const T v = tm[j] == kFill ? fill : in[off + tm[j]];
    for (int64_t k = 0; k < n; ++k) o[k] = v;
  }
}

template <typename T>
static inline void broadcast_rows(const T *in, const int64_t *tm, int64_t off, int64_t j0,
                                  int64_t j1, int64_t r, T *o, T fill) {
  switch (r) {
    case 2: broadcast_rows<T, 2>(in, tm, off, j0, j1, r, o, fill); break;
    case 3: broadcast_rows<T, 3>(in, tm, off, j0, j1, r, o, fill); break;
    case 4: broadcast_rows<T, 4>(in, tm, off, j0, j1, r, o, fill); break;
    case 8: broadcast_rows<T, 8>(in, tm, off, j0, j1, r, o, fill); break;
    default: broadcast_rows<T, 0>(in, tm, off, j0, j1, r, o, fill);
  }
}

template <typename T>
static void table_gather(MXOpCall *c, const Tables &t) {
  const MXTBlob &out = c->outputs[0];
  const int64_t size = mx_tblob_size(&out);
  if (size == 0) return;
  const int64_t nd = t.h->ndim, inner = t.shape[nd - 1], rows = size / inner;
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *dst = static_cast<T *>(out.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const T fill = convert<T>(t.h->value);
  if (nd >= 2 && inner < kShortRow) {
    const int64_t mid = t.shape[nd - 2], *tm = t.table[nd - 2];
    const bool broadcast = !add && t.h->nruns == 1 && t.runs[0].step == 0 && !t.runs[0].fill;
    parallel_for_cost(rows, inner, [&](int64_t begin, int64_t end) {
      int64_t idx[2 * MX_MAX_DIM];
      row_index(t, begin, idx, nd - 1);
      for (int64_t r = begin; r < end;) {
        const int64_t off = row_offset(t, idx, nd - 2);
        const int64_t j0 = idx[nd - 2], j1 = std::min(mid, j0 + (end - r));
        T *o = dst + r * inner;
        if (broadcast && off != kFill) {
          broadcast_rows(in, tm, off + t.runs[0].src, j0, j1, inner, o, fill);
        } else {
          for (int64_t j = j0; j < j1; ++j, o += inner)
            gather_row(t, in, off == kFill || tm[j] == kFill ? kFill : off + tm[j], o, add,
                       fill);
        }
        r += j1 - j0;
        idx[nd - 2] = mid - 1;                // carry into the outer axes
        next_row(t, idx, nd - 1);
      }
    });
    return;
  }
  parallel_for_cost(rows, inner, [&](int64_t begin, int64_t end) {
    int64_t idx[2 * MX_MAX_DIM];
    row_index(t, begin, idx, nd - 1);
    for (int64_t r = begin; r < end; ++r) {
      gather_row(t, in, row_offset(t, idx, nd - 1), dst + r * inner, add, fill);
      next_row(t, idx, nd - 1);
    }
  });
}

// The adjoint: in_grad[src(i)] += out_grad[i] over every output item i
// (fills read nothing, so they give nothing back).  Several items may share
// a source (repeat, tile, broadcast_axis, Pad's edges), so it runs on one
// thread; req 'write' zeroes the gradient first.
template <typename T>
static void table_scatter(MXOpCall *c, const Tables &t) {
  const MXTBlob &og = c->inputs[0], &ig = c->outputs[0];
  T *dst = static_cast<T *>(ig.dptr);
  if (c->req[0] != MX_REQ_ADD) std::fill(dst, dst + mx_tblob_size(&ig), T(0));
  const int64_t size = mx_tblob_size(&og);
  if (size == 0) return;
  const int64_t inner = t.shape[t.h->ndim - 1], rows = size / inner;
  const T *g = static_cast<const T *>(og.dptr);
  const int64_t nouter = t.h->ndim - 1;
  int64_t idx[2 * MX_MAX_DIM];
  row_index(t, 0, idx, nouter);
  for (int64_t row = 0; row < rows; ++row, g += inner) {
    const int64_t off = row_offset(t, idx, nouter);
    next_row(t, idx, nouter);
    if (off == kFill) continue;
    const T *o = g;
    for (int64_t k = 0; k < t.h->nruns; ++k) {
      const TableRun &r = t.runs[k];
      if (!r.fill) {
        T *s = dst + off + r.src;
        if (r.step == 0) {
          T acc = *s;
          for (int64_t i = 0; i < r.len; ++i) acc = wrap_add(acc, o[i]);
          *s = acc;
        } else {
          for (int64_t i = 0; i < r.len; ++i) s[i * r.step] = wrap_add(s[i * r.step], o[i]);
        }
      }
      o += r.len;
    }
  }
}

static int layout_gather(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const Tables t = read_tables(c->params);
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, table_gather<T>(c, t))
  return 0;
}

static int layout_scatter(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const Tables t = read_tables(c->params);
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, table_scatter<T>(c, t))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_LAYOUT_CPU_H_
