// diag and _backward_diag: one kernel that moves a diagonal between a
// "matrix" array and a "diagonal" array.  The matrix is seen as
// (P, n_lo, Q, n_hi, R), its two diagonal axes being n_lo and n_hi in
// memory order; the diagonal is (P, Q, R, L), and its entry l sits at
// (off_lo + l, off_hi + l) on those axes.  Extract copies the diagonal
// out of the matrix (diag of an N-D array, the gradient of diag of a
// vector); embed writes it into a matrix that is zero elsewhere (diag of a
// vector, the gradient of diag of an N-D array).  Every OpReqType is
// honoured; req 'add' wraps integers and leaves the off-diagonal alone.
#ifndef MX_OPS_DIAG_CPU_H_
#define MX_OPS_DIAG_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

enum DiagMode { DIAG_EXTRACT = 0, DIAG_EMBED = 1 };

// Packed by mx_ops.ops.diag.diag.
struct DiagParam {
  int64_t mode, P, Q, R, n_lo, n_hi, L, off_lo, off_hi;
};

// The matrix offset of diagonal entry (p, q, r, l).
static inline int64_t diag_at(const DiagParam *d, int64_t p, int64_t q, int64_t r, int64_t l) {
  return (((p * d->n_lo + d->off_lo + l) * d->Q + q) * d->n_hi + d->off_hi + l) * d->R + r;
}

template <typename T>
static void diag_extract(const DiagParam *d, const T *mat, T *out, bool add) {
  const int64_t rows = d->P * d->Q * d->R, L = d->L;
  parallel_for_cost(rows, L, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t r = row % d->R, q = row / d->R % d->Q, p = row / d->R / d->Q;
      T *o = out + row * L;
      for (int64_t l = 0; l < L; ++l) {
        const T v = mat[diag_at(d, p, q, r, l)];
        o[l] = add ? wrap_add(o[l], v) : v;
      }
    }
  });
}

template <typename T>
static void diag_embed(const DiagParam *d, const T *diag, T *mat, int64_t size, bool add) {
  if (!add)
    parallel_for(size, [&](int64_t lo, int64_t hi) {
      std::memset(mat + lo, 0, size_t(hi - lo) * sizeof(T));
    });
  const int64_t rows = d->P * d->Q * d->R, L = d->L;
  parallel_for_cost(rows, L, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t r = row % d->R, q = row / d->R % d->Q, p = row / d->R / d->Q;
      const T *s = diag + row * L;
      for (int64_t l = 0; l < L; ++l) {
        T &m = mat[diag_at(d, p, q, r, l)];
        m = add ? wrap_add(m, s[l]) : s[l];
      }
    }
  });
}

static int diag_run(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const DiagParam *d = static_cast<const DiagParam *>(c->params);
  const bool add = c->req[0] == MX_REQ_ADD;
  const void *in = c->inputs[0].dptr;
  void *out = c->outputs[0].dptr;
  const int64_t size = mx_tblob_size(&c->outputs[0]);
  MX_TYPE_SWITCH(c->outputs[0].dtype, T,
    if (d->mode == DIAG_EXTRACT)
      diag_extract<T>(d, static_cast<const T *>(in), static_cast<T *>(out), add);
    else
      diag_embed<T>(d, static_cast<const T *>(in), static_cast<T *>(out), size, add);)
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_DIAG_CPU_H_
