// Local response normalisation across channels (MXNet's LRN, lrn-inl.h)
// for NCHW data, as the kernels of a native OperatorProperty-style
// operator (mx_ops/ops/norm/_lrn_cpu.pyx):
//   norm = knorm + alpha / nsize * sum over the window of x^2
//   out  = x * norm^-beta
// The window of channel c is mshadow's chpool window [c - nsize/2,
// c - nsize/2 + nsize), clipped.  The backward is the exact gradient, which
// sums over the transposed window (the channels whose window holds c); for
// odd nsize that is the same window, as MXNet's backward assumes.
#ifndef MX_OPS_LRN_CPU_H_
#define MX_OPS_LRN_CPU_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mx_ops/operator.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

struct LRNParam {
  double alpha, beta, knorm;
  int64_t nsize;
};

// out[i] = v (write, inplace), += v (add); nothing for null.
template <typename T, typename A>
static inline void lrn_store(T *out, int64_t i, A v, int32_t req) {
  if (req == MX_REQ_ADD) out[i] = T(A(out[i]) + v);
  else if (req != MX_REQ_NULL) out[i] = T(v);
}

template <typename T>
static void lrn_forward_t(const MXTBlob &data, const MXTBlob &out, int32_t req_out,
                          const MXTBlob &norm, int32_t req_norm, const LRNParam &p) {
  typedef typename NnAcc<T>::type A;
  const int64_t C = data.shape[1], S = data.shape[2] * data.shape[3];
  const int64_t rows = data.shape[0] * C, h = p.nsize / 2;
  const T *x = static_cast<const T *>(data.dptr);
  T *y = static_cast<T *>(out.dptr), *nm = static_cast<T *>(norm.dptr);
  const A salpha = A(p.alpha / double(p.nsize)), k = A(p.knorm), nbeta = A(-p.beta);
  parallel_for_cost(rows, S * p.nsize, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(size_t(S > 0 ? S : 1));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t c = r % C, first = r - c;
      const int64_t lo = std::max<int64_t>(c - h, 0), hi = std::min<int64_t>(c - h + p.nsize, C);
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t j = lo; j < hi; ++j) {
        const T *xj = x + (first + j) * S;
        for (int64_t s = 0; s < S; ++s) acc[s] += A(xj[s]) * A(xj[s]);
      }
      for (int64_t s = 0; s < S; ++s) {
        const A n = k + salpha * acc[s];
        lrn_store(nm, r * S + s, n, req_norm);
        lrn_store(y, r * S + s, A(x[r * S + s]) * A(std::pow(n, nbeta)), req_out);
      }
    }
  });
}

// in_grad = g * norm^-beta - 2 beta alpha / nsize * x * sum_j g_j out_j / norm_j
// over the channels j whose window holds c.  The sums' terms go to the
// workspace first, so in_grad may share out_grad's memory.
template <typename T>
static void lrn_backward_t(const MXTBlob &grad, const MXTBlob &data, const MXTBlob &norm,
                           const MXTBlob &out, const MXTBlob &in_grad, int32_t req,
                           void *workspace, const LRNParam &p) {
  typedef typename NnAcc<T>::type A;
  const int64_t C = data.shape[1], S = data.shape[2] * data.shape[3];
  const int64_t rows = data.shape[0] * C, h = p.nsize / 2;
  const T *g = static_cast<const T *>(grad.dptr), *x = static_cast<const T *>(data.dptr);
  const T *nm = static_cast<const T *>(norm.dptr), *y = static_cast<const T *>(out.dptr);
  T *gx = static_cast<T *>(in_grad.dptr);
  A *q = static_cast<A *>(workspace);
  const A coef = A(-2.0 * p.beta * p.alpha / double(p.nsize)), nbeta = A(-p.beta);
  parallel_for(rows * S, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) q[i] = A(g[i]) * A(y[i]) / A(nm[i]);
  });
  parallel_for_cost(rows, S * p.nsize, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(size_t(S > 0 ? S : 1));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t c = r % C, first = r - c;
      const int64_t lo = std::max<int64_t>(c + h - p.nsize + 1, 0);
      const int64_t hi = std::min<int64_t>(c + h + 1, C);
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t j = lo; j < hi; ++j) {
        const A *qj = q + (first + j) * S;
        for (int64_t s = 0; s < S; ++s) acc[s] += qj[s];
      }
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = r * S + s;
        const A v = A(g[i]) * A(std::pow(A(nm[i]), nbeta)) + coef * A(x[i]) * acc[s];
        lrn_store(gx, i, v, req);
      }
    }
  });
}

// Bytes of workspace the backward needs for data of `elements` elements
// and dtype flag `dtype` (the sums' terms, in the compute type).
static inline int64_t lrn_backward_workspace(int64_t elements, int32_t dtype) {
  return elements * (dtype == MX_FLOAT64 ? 8 : 4);
}

// inputs (data), outputs (out, tmp_norm).
static inline int lrn_forward(MXOpContext *c, const LRNParam *p, MXBlobs in,
                              const int32_t *req, MXBlobs out) {
  MX_FLOAT_SWITCH(in.data[0].dtype, T, lrn_forward_t<T>(in.data[0], out.data[0], req[0],
                                                        out.data[1], req[1], *p));
  return 0;
}

// out_grad (output's), in_data (data), out_data (out, tmp_norm); in_grad (data's).
static inline int lrn_backward(MXOpContext *c, const LRNParam *p, MXBlobs out_grad,
                               MXBlobs in_data, MXBlobs out_data, const int32_t *req,
                               MXBlobs in_grad) {
  const MXTBlob &data = in_data.data[0];
  if (req[0] == MX_REQ_NULL) return 0;
  if (c->workspace == nullptr ||
      c->workspace_size < lrn_backward_workspace(mx_tblob_size(&data), data.dtype)) {
    c->error = "the workspace is smaller than the backward needs";
    return -1;
  }
  MX_FLOAT_SWITCH(data.dtype, T, lrn_backward_t<T>(out_grad.data[0], data, out_data.data[1],
                                                   out_data.data[0], in_grad.data[0], req[0],
                                                   c->workspace, *p));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_LRN_CPU_H_
