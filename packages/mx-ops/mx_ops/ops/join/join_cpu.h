// Concat and SliceChannel as one blocked copy.  Seen around the joined
// axis, every array is (outer, rows): `outer` is the product of the axes
// before it, and a part's row holds its share of the axis times the
// product of the axes after it.  The whole array's row is its parts' rows
// laid end to end, so both directions copy contiguous runs (memcpy when
// writing) and SliceChannel's squeezed outputs need no special case.
#ifndef MX_OPS_JOIN_CPU_H_
#define MX_OPS_JOIN_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"

namespace mxop {

// Packed by mx_ops.ops.join.join: the joined axis, normalized, of the whole array.
struct JoinParam { int64_t axis; };

// Copies between the whole array `whole` and its parts; `split` says which
// way.  req holds one entry per written array (the whole for Concat, each
// part for SliceChannel).
template <typename T>
static void join_loop(const MXTBlob &whole, const MXTBlob *parts, int nparts, int64_t axis,
                      const int32_t *req, bool split) {
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= whole.shape[d];
  const int64_t total = mx_tblob_size(&whole);
  if (total == 0) return;
  const int64_t row = total / outer;
  T *base = static_cast<T *>(whole.dptr);
  int64_t off = 0;
  for (int k = 0; k < nparts; ++k) {
    const int64_t n = mx_tblob_size(&parts[k]) / outer;
    const int32_t r = split ? req[k] : req[0];
    if (n != 0 && r != MX_REQ_NULL) {
      T *part = static_cast<T *>(parts[k].dptr);
      for (int64_t o = 0; o < outer; ++o) {
        T *w = base + o * row + off;
        T *p = part + o * n;
        const T *src = split ? w : p;
        T *dst = split ? p : w;
        if (r == MX_REQ_ADD) for (int64_t i = 0; i < n; ++i) dst[i] = wrap_add(dst[i], src[i]);
        else std::memcpy(dst, src, n * sizeof(T));
      }
    }
    off += n;
  }
}

static int join_concat(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const int64_t axis = static_cast<const JoinParam *>(c->params)->axis;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T,
                 join_loop<T>(c->outputs[0], c->inputs, c->nin, axis, c->req, false))
  return 0;
}

static int join_split(MXOpCall *c) {
  const int64_t axis = static_cast<const JoinParam *>(c->params)->axis;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T,
                 join_loop<T>(c->inputs[0], c->outputs, c->nout, axis, c->req, true))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_JOIN_CPU_H_
