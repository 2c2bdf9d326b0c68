// gather_nd, scatter_nd and _scatter_set_nd: rows of `data` addressed by
// index tuples.  indices has shape (M, Y...); tuple y is
// (indices[0, y], ..., indices[M-1, y]) and names the row
// data[i0, ..., i(M-1), :, ...] of `row` elements.
//   gather_nd:       out[y, :] = data[tuple y]
//   scatter_nd:      out = 0, then out[tuple y] = data[y, :]
//   _scatter_set_nd: out = lhs, then out[tuple y] = rhs[y, :]
// (with duplicate tuples the last row written wins, as in NumPy).  Indices
// of any dtype are C-cast to int64 (NaN and floats out of range give
// INT64_MIN, int_arith.h); negatives count from the end, and one out of
// range is an error naming the argument, before anything is written.
#ifndef MX_OPS_ND_INDEX_CPU_H_
#define MX_OPS_ND_INDEX_CPU_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"

namespace mxop {

// Packed by mx_ops.ops.nd_index.nd_index: M, the number of tuples, the row length, and
// the addressed array's leading dims and row-major strides (in elements).
struct NdIndexParam {
  int64_t m, ntuples, row;
  int64_t dims[MX_MAX_DIM], strides[MX_MAX_DIM];
};

template <typename I>
static bool tuple_offsets(const MXTBlob &idx, const NdIndexParam &p, int64_t *off) {
  const I *x = static_cast<const I *>(idx.dptr);
  for (int64_t y = 0; y < p.ntuples; ++y) {
    int64_t o = 0;
    for (int64_t j = 0; j < p.m; ++j) {
      int64_t i = convert<int64_t>(x[j * p.ntuples + y]);
      if (i < 0) i += p.dims[j];
      if (i < 0 || i >= p.dims[j]) return false;
      o += i * p.strides[j];
    }
    off[y] = o;
  }
  return true;
}

// Fills off[] with the element offset of every tuple's row; -1 after
// setting c->error.
static int tuple_offsets_any(MXOpCall *c, const MXTBlob &idx, const NdIndexParam &p,
                             int64_t *off) {
  bool ok = false;
  MX_TYPE_SWITCH(idx.dtype, I, ok = tuple_offsets<I>(idx, p, off))
  if (!ok) {
    c->error = "argument 'indices' holds an index out of range";
    return -1;
  }
  return 0;
}

// The offsets in a new buffer (the caller frees it), or NULL after setting
// c->error.
static int64_t *row_offsets(MXOpCall *c, const MXTBlob &idx, const NdIndexParam &p) {
  int64_t *off = static_cast<int64_t *>(std::malloc(sizeof(int64_t) * (p.ntuples ? p.ntuples : 1)));
  if (off == nullptr) { c->error = "cannot allocate the index buffer"; return nullptr; }
  if (tuple_offsets_any(c, idx, p, off) != 0) {
    std::free(off);
    return nullptr;
  }
  return off;
}

// Moves the p.ntuples rows between the dense side (row y at y * p.row) and
// the indexed side (row y at off[y]): gather reads the indexed side, scatter
// writes it; add accumulates instead of copying.
template <typename T>
static void move_rows(char *dst, const char *src, const NdIndexParam &p, const int64_t *off,
                      bool gather, bool add) {
  T *d = reinterpret_cast<T *>(dst);
  const T *s = reinterpret_cast<const T *>(src);
  for (int64_t y = 0; y < p.ntuples; ++y) {
    T *to = d + (gather ? y * p.row : off[y]);
    const T *from = s + (gather ? off[y] : y * p.row);
    if (add) for (int64_t i = 0; i < p.row; ++i) to[i] = wrap_add(to[i], from[i]);
    else std::memcpy(to, from, size_t(p.row) * sizeof(T));
  }
}

// Moves rows between `dense` and the output along the tuples of `idx`.
static int nd_move(MXOpCall *c, const MXTBlob &dense, const MXTBlob &idx, bool gather,
                   bool add) {
  const NdIndexParam &p = *static_cast<const NdIndexParam *>(c->params);
  const MXTBlob &out = c->outputs[0];
  int64_t *off = row_offsets(c, idx, p);
  if (off == nullptr) return -1;
  char *dst = static_cast<char *>(out.dptr);
  const char *src = static_cast<const char *>(dense.dptr);
  int rc = 0;
  switch (out.dtype) {
    case MX_FLOAT32: move_rows<float>(dst, src, p, off, gather, add); break;
    case MX_FLOAT64: move_rows<double>(dst, src, p, off, gather, add); break;
    case MX_FLOAT16: move_rows<half_t>(dst, src, p, off, gather, add); break;
    case MX_UINT8: move_rows<uint8_t>(dst, src, p, off, gather, add); break;
    case MX_INT8: move_rows<int8_t>(dst, src, p, off, gather, add); break;
    case MX_INT32: move_rows<int32_t>(dst, src, p, off, gather, add); break;
    case MX_INT64: move_rows<int64_t>(dst, src, p, off, gather, add); break;
    default: c->error = "unsupported dtype"; rc = -1;
  }
  std::free(off);
  return rc;
}

static int nd_gather(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  return nd_move(c, c->inputs[0], c->inputs[1], true, c->req[0] == MX_REQ_ADD);
}

static int nd_scatter(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const MXTBlob &out = c->outputs[0];
  const bool add = c->req[0] == MX_REQ_ADD;
  if (!add)
    std::memset(out.dptr, 0, size_t(mx_tblob_size(&out) * mx_dtype_size(out.dtype)));
  return nd_move(c, c->inputs[0], c->inputs[1], false, add);
}

static int nd_scatter_set(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  if (c->req[0] == MX_REQ_ADD) {
    c->error = "req 'add' is not supported by an assignment";
    return -1;
  }
  const MXTBlob &lhs = c->inputs[0], &out = c->outputs[0];
  if (out.dptr != lhs.dptr)
    std::memmove(out.dptr, lhs.dptr, size_t(mx_tblob_size(&out) * mx_dtype_size(out.dtype)));
  return nd_move(c, c->inputs[1], c->inputs[2], false, false);
}

// _backward_gather_nd(ograd, indices, data): data's gradient, zeros (unless
// req is add) with every row of ograd added at its tuple, so that duplicate
// tuples accumulate (MXNet's GatherNDBackward).  `data` is read for its
// shape only, by the packer.
static int nd_gather_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const MXTBlob &out = c->outputs[0];
  if (c->req[0] != MX_REQ_ADD)
    std::memset(out.dptr, 0, size_t(mx_tblob_size(&out) * mx_dtype_size(out.dtype)));
  return nd_move(c, c->inputs[0], c->inputs[1], false, true);
}

}  // namespace mxop
#endif  // MX_OPS_ND_INDEX_CPU_H_
