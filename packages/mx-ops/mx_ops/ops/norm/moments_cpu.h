// moments (mean and variance over a set of axes) and its backward on the
// CPU.  Python merges the data's dimensions into alternating kept and
// reduced groups (size-1 dimensions dropped) and packs their sizes; each
// output element then owns the reduced elements at its kept index, walked
// with an odometer over the reduced groups whose innermost run is a
// vectorised loop when the data's last group is reduced; when it is kept,
// blocks of neighbouring outputs walk together (vectorised across them).
//   mean = sum(x) / N, var = sum((x - mean)^2) / N      (two passes, as MXNet)
// Sums run in double (float16 in float).
// Backward: dx = (dmean + 2 * dvar * (x - mean)) / N.
#ifndef MX_OPS_MOMENTS_CPU_H_
#define MX_OPS_MOMENTS_CPU_H_

#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.norm.moments (MomentsParam): the merged dimensions,
// outermost first, and whether each is reduced.
struct MomentsParam {
  int32_t ndim;
  int32_t reserved;
  int64_t dims[MX_MAX_DIM];
  int32_t reduced[MX_MAX_DIM];
};

// Outputs handled together when the data's last (merged) dimension is
// kept: their reduced elements sit side by side, so each step of the walk
// is a contiguous, vectorised run over the block.
constexpr int64_t kMomBlock = 256;

// The walk of one call: kept and reduced dimensions with their strides.
struct MomentsWalk {
  int nk = 0, nr = 0;
  int64_t ksize[MX_MAX_DIM], kstride[MX_MAX_DIM], rsize[MX_MAX_DIM], rstride[MX_MAX_DIM];
  int64_t nout = 1, nred = 1;

  explicit MomentsWalk(const MomentsParam &p) {
    int64_t stride = 1;
    for (int d = p.ndim - 1; d >= 0; --d) {
      if (p.reduced[d]) {
        rsize[nr] = p.dims[d];
        rstride[nr++] = stride;
        nred *= p.dims[d];
      } else {
        ksize[nk] = p.dims[d];
        kstride[nk++] = stride;
        nout *= p.dims[d];
      }
      stride *= p.dims[d];
    }
  }

  // The offset of output element o's first reduced element.
  int64_t base(int64_t o) const {
    int64_t off = 0;
    for (int j = 0; j < nk; ++j) {
      off += (o % ksize[j]) * kstride[j];
      o /= ksize[j];
    }
    return off;
  }

  // True when the innermost merged dimension is kept (outputs o and o + 1
  // of one row have neighbouring reduced elements): the column walk.
  bool columns() const { return nk > 0 && kstride[0] == 1 && ksize[0] > 1; }

  // Calls f(offset) for each of output o's reduced elements.
  template <typename F>
  void each(int64_t o, F f) const {
    runs(o, [&](int64_t off, int64_t len, int64_t st) {
      for (int64_t k = 0; k < len; ++k) f(off + k * st);
    });
  }

  // Column walk: blocks of up to kMomBlock outputs along the innermost kept
  // dimension; calls f(first output, count) for blocks b0 .. b1-1.
  int64_t blocks() const {
    return nout / ksize[0] * ((ksize[0] + kMomBlock - 1) / kMomBlock);
  }
  template <typename F>
  void each_block(int64_t b0, int64_t b1, F f) const {
    const int64_t per_row = (ksize[0] + kMomBlock - 1) / kMomBlock;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t j0 = b % per_row * kMomBlock;
      const int64_t len = ksize[0] - j0 < kMomBlock ? ksize[0] - j0 : kMomBlock;
      f(b / per_row * ksize[0] + j0, len);
    }
  }

  // Calls f(offset, len, stride) for each innermost run of output o's
  // reduced elements.
  template <typename F>
  void runs(int64_t o, F f) const {
    const int64_t b = base(o);
    if (nred == 0) return;
    if (nr == 0) {
      f(b, int64_t(1), int64_t(1));
      return;
    }
    int64_t idx[MX_MAX_DIM] = {0};
    const int64_t outer = nred / rsize[0];
    for (int64_t t = 0; t < outer; ++t) {
      int64_t off = b;
      for (int j = 1; j < nr; ++j) off += idx[j] * rstride[j];
      f(off, rsize[0], rstride[0]);
      for (int j = 1; j < nr; ++j) {
        if (++idx[j] < rsize[j]) break;
        idx[j] = 0;
      }
    }
  }
};

template <typename T> struct MomAcc { typedef double type; };
template <> struct MomAcc<half_t> { typedef float type; };

template <typename A, typename T, typename F>
static inline A mom_run_sum(const T *x, int64_t len, int64_t stride, F f) {
  A s = 0;
  if (stride == 1) {
#pragma omp simd reduction(+ : s)
    for (int64_t k = 0; k < len; ++k) s += f(A(x[k]));
  } else {
    for (int64_t k = 0; k < len; ++k) s += f(A(x[k * stride]));
  }
  return s;
}

template <typename T>
static int moments_forward_typed(MXOpCall *c) {
  typedef typename MomAcc<T>::type A;
  const MomentsWalk w(*static_cast<const MomentsParam *>(c->params));
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *mean = static_cast<T *>(c->outputs[0].dptr);
  T *var = static_cast<T *>(c->outputs[1].dptr);
  const int32_t rm = c->req[0], rv = c->req[1];
  const A n = A(w.nred);
  if (w.columns()) {
    parallel_for_cost(w.blocks(), 2 * w.nred * kMomBlock, [&](int64_t b0, int64_t b1) {
      A s[kMomBlock], q[kMomBlock];
      w.each_block(b0, b1, [&](int64_t o0, int64_t len) {
        for (int64_t j = 0; j < len; ++j) s[j] = q[j] = 0;
        w.each(o0, [&](int64_t e) {
          const T *xr = x + e;
#pragma omp simd
          for (int64_t j = 0; j < len; ++j) s[j] += A(xr[j]);
        });
        for (int64_t j = 0; j < len; ++j) s[j] /= n;
        w.each(o0, [&](int64_t e) {
          const T *xr = x + e;
#pragma omp simd
          for (int64_t j = 0; j < len; ++j) q[j] += (A(xr[j]) - s[j]) * (A(xr[j]) - s[j]);
        });
        for (int64_t j = 0; j < len; ++j) {
          nn_put(mean, o0 + j, s[j], rm);
          nn_put(var, o0 + j, A(q[j] / n), rv);
        }
      });
    });
    return 0;
  }
  parallel_for_cost(w.nout, 2 * w.nred, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      A s = 0;
      w.runs(o, [&](int64_t off, int64_t len, int64_t st) {
        s += mom_run_sum<A>(x + off, len, st, [](A v) { return v; });
      });
      const A m = s / n;           // an empty reduction gives NaN (0/0)
      A q = 0;
      w.runs(o, [&](int64_t off, int64_t len, int64_t st) {
        q += mom_run_sum<A>(x + off, len, st, [m](A v) { return (v - m) * (v - m); });
      });
      nn_put(mean, o, m, rm);
      nn_put(var, o, A(q / n), rv);
    }
  });
  return 0;
}

// Inputs (mean_grad, var_grad, data, mean); output data_grad.
template <typename T>
static int moments_backward_typed(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const MomentsWalk w(*static_cast<const MomentsParam *>(c->params));
  const T *gm = static_cast<const T *>(c->inputs[0].dptr);
  const T *gv = static_cast<const T *>(c->inputs[1].dptr);
  const T *x = static_cast<const T *>(c->inputs[2].dptr);
  const T *mean = static_cast<const T *>(c->inputs[3].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  if (c->req[0] == MX_REQ_NULL) return 0;
  const bool add = c->req[0] == MX_REQ_ADD;
  const A inv_n = w.nred ? A(1) / A(w.nred) : A(0);
  if (w.columns()) {
    parallel_for_cost(w.blocks(), w.nred * kMomBlock, [&](int64_t b0, int64_t b1) {
      A a[kMomBlock], b[kMomBlock], m[kMomBlock];
      w.each_block(b0, b1, [&](int64_t o0, int64_t len) {
        for (int64_t j = 0; j < len; ++j) {
          a[j] = A(gm[o0 + j]) * inv_n;
          b[j] = A(2) * A(gv[o0 + j]) * inv_n;
          m[j] = A(mean[o0 + j]);
        }
        w.each(o0, [&](int64_t e) {
          const T *xr = x + e;
          T *dr = dx + e;
          if (add) {
            for (int64_t j = 0; j < len; ++j)
              nn_store<true>(dr, j, A(a[j] + b[j] * (A(xr[j]) - m[j])));
          } else {
#pragma omp simd
            for (int64_t j = 0; j < len; ++j) dr[j] = T(a[j] + b[j] * (A(xr[j]) - m[j]));
          }
        });
      });
    });
    return 0;
  }
  parallel_for_cost(w.nout, w.nred, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const A a = A(gm[o]) * inv_n, b = A(2) * A(gv[o]) * inv_n, m = A(mean[o]);
      w.runs(o, [&](int64_t off, int64_t len, int64_t st) {
        const T *xr = x + off;
        T *dr = dx + off;
        if (add) {
          for (int64_t k = 0; k < len; ++k)
            nn_store<true>(dr, k * st, A(a + b * (A(xr[k * st]) - m)));
        } else if (st == 1) {
#pragma omp simd
          for (int64_t k = 0; k < len; ++k) dr[k] = T(a + b * (A(xr[k]) - m));
        } else {
          for (int64_t k = 0; k < len; ++k) dr[k * st] = T(a + b * (A(xr[k * st]) - m));
        }
      });
    }
  });
  return 0;
}

static int moments_forward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return moments_forward_typed<T>(c));
  return 0;
}

static int moments_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[2].dtype, T, return moments_backward_typed<T>(c));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_MOMENTS_CPU_H_
