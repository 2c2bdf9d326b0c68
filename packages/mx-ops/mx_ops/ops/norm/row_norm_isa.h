// One instruction set's copy of the row loops of row_norm_cpu.h, which
// includes this file once per instruction set inside `#pragma GCC target`
// regions with MX_RN_NS naming the namespace.  No include guard on purpose.

namespace mxop {
namespace MX_RN_NS {

// Sums of f(A(x[k])) -> {u, v} over one row of n elements `stride` apart,
// in runs of kRnRun in the compute type whose totals add up in double.
template <typename T, typename F>
static inline void rn_row_sums(const T *x, int64_t n, int64_t stride, F f, double *su,
                               double *sv) {
  typedef typename NnAcc<T>::type A;
  double s0 = 0, s1 = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kRnRun) {
    const int64_t k1 = k0 + kRnRun < n ? k0 + kRnRun : n;
    A ru = 0, rv = 0;
    if (stride == 1) {
#pragma omp simd reduction(+ : ru, rv)
      for (int64_t k = k0; k < k1; ++k) {
        A u, v;
        f(A(x[k]), &u, &v);
        ru += u;
        rv += v;
      }
    } else {
      for (int64_t k = k0; k < k1; ++k) {
        A u, v;
        f(A(x[k * stride]), &u, &v);
        ru += u;
        rv += v;
      }
    }
    s0 += double(ru);
    s1 += double(rv);
  }
  *su = s0;
  *sv = s1;
}

// Mean, variance and 1/sqrt(var + eps) of one row.  One pass of shifted
// sums, s = sum(x - x0) and q = sum((x - x0)^2) with x0 the row's first
// element, gives var = q/n - (s/n)^2; that loses digits in proportion to
// (s/n)^2 / var, so when x0 lies more than kRnShiftTrust standard
// deviations from the mean (a spike at the row's start) a second pass
// takes the deviations from the mean found (the row is still in cache):
// the corrected two-pass algorithm, which also refines the mean.
template <typename T>
static inline RnStats rn_row_stats(const T *x, int64_t n, int64_t stride, double eps) {
  typedef typename NnAcc<T>::type A;
  if (n == 0) return RnStats{0.0, 0.0, 1.0 / std::sqrt(eps)};
  const A x0 = A(x[0]);
  double s, q;
  rn_row_sums(x, n, stride, [=](A v, A *u, A *w) {
    const A d = v - x0;
    *u = d;
    *w = d * d;
  }, &s, &q);
  const double m = s / double(n);
  double mean = double(x0) + m, var = q / double(n) - m * m;
  if (m * m > kRnShiftTrust * kRnShiftTrust * var) {
    // The mean as a pair mh + ml in the compute type, so that x - mean
    // keeps its digits when the mean is large against the spread.
    const A mh = A(mean), ml = A(mean - double(mh));
    double c;
    rn_row_sums(x, n, stride, [=](A v, A *u, A *w) {
      const A d = v - mh - ml;
      *u = d;
      *w = d * d;
    }, &c, &q);
    mean += c / double(n);
    var = (q - c * c / double(n)) / double(n);
  }
  if (var < 0) var = 0;
  return RnStats{mean, var, 1.0 / std::sqrt(var + eps)};
}

template <bool ADD, typename T>
static void rn_forward_rows(const RowNormParam &p, const T *x, const T *gamma, const T *beta,
                            T *y, T *mean_out, T *std_out, int32_t req_mean,
                            int32_t req_std, int64_t r0, int64_t r1) {
  typedef typename NnAcc<T>::type A;
  const int64_t n = p.n, inner = p.inner;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const int64_t base = o * n * inner + i;
    const RnStats st = rn_row_stats(x + base, n, inner, p.eps);
    nn_put(mean_out, r, st.mean, req_mean);
    nn_put(std_out, r, p.save_var ? st.var : std::sqrt(st.var + p.eps), req_std);
    if (!y) continue;
    // The mean as a float pair mh + ml, so that x - mean keeps its digits
    // when the mean is large against the spread.
    const A mh = A(st.mean), ml = A(st.mean - double(mh)), rs = A(st.rstd);
    if (p.per_row) {
      const int64_t j = r % p.per_row;
      const A a = rs * A(gamma[j]), b = A(beta[j]);
      const T *xr = x + base;
      T *yr = y + base;
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) nn_store<ADD>(yr, k, A((A(xr[k]) - mh - ml) * a + b));
    } else if (inner == 1) {
      const T *xr = x + base;
      T *yr = y + base;
#pragma omp simd
      for (int64_t k = 0; k < n; ++k)
        nn_store<ADD>(yr, k, A((A(xr[k]) - mh - ml) * rs * A(gamma[k]) + A(beta[k])));
    } else {
      for (int64_t k = 0; k < n; ++k) {
        const int64_t e = base + k * inner;
        nn_store<ADD>(y, e, A((A(x[e]) - mh - ml) * rs * A(gamma[k]) + A(beta[k])));
      }
    }
  }
}

// Sums over a contiguous row of f(k) -> {u, v} in the compute type, in
// runs of kRnRun whose totals add up in double.
template <typename A, typename F>
static inline void rn_run_sums(int64_t n, F f, double *su, double *sv) {
  double s0 = 0, s1 = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kRnRun) {
    const int64_t k1 = k0 + kRnRun < n ? k0 + kRnRun : n;
    A ru = 0, rv = 0;
#pragma omp simd reduction(+ : ru, rv)
    for (int64_t k = k0; k < k1; ++k) {
      A u, v;
      f(k, &u, &v);
      ru += u;
      rv += v;
    }
    s0 += double(ru);
    s1 += double(rv);
  }
  *su = s0;
  *sv = s1;
}

// One row of the backward: writes dx (unless null) and adds the row's
// dgamma/dbeta terms, per k into dg/db (LayerNorm, compute type) or as two
// row sums (per-row parameters, double).
template <bool ADD, typename T, typename A>
static void rn_backward_row(const RowNormParam &p, const T *dy, const T *x, const T *gamma,
                            double mean, double rstd, T *dx, A *dg, A *db, double *row_sums,
                            int64_t r) {
  const int64_t n = p.n, inner = p.inner, o = r / inner, i = r % inner;
  const int64_t base = o * n * inner + i;
  const double wrow = p.per_row ? double(gamma[r % p.per_row]) : 1.0;
  const A mh = A(mean), ml = A(mean - double(mh)), rs = A(rstd);   // as in the forward
  // Sums of g and g * (x - mean), g = dy * gamma (per-row parameters: of
  // dy and dy * (x - mean), times gamma after).
  double sg = 0, sgx = 0;
  if (inner == 1) {
    const T *dyr = dy + base, *xr = x + base;
    if (p.per_row) {
      rn_run_sums<A>(n, [=](int64_t k, A *u, A *v) {
        const A d = A(dyr[k]);
        *u = d;
        *v = d * (A(xr[k]) - mh - ml);
      }, &sg, &sgx);
    } else {
      rn_run_sums<A>(n, [=](int64_t k, A *u, A *v) {
        const A g = A(dyr[k]) * A(gamma[k]);
        *u = g;
        *v = g * (A(xr[k]) - mh - ml);
      }, &sg, &sgx);
    }
  } else {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t e = base + k * inner;
      const double g = double(dy[e]) * (p.per_row ? 1.0 : double(gamma[k]));
      sg += g;
      sgx += g * (double(x[e]) - mean);
    }
  }
  if (p.per_row) {
    row_sums[2 * r] = sgx * rstd;
    row_sums[2 * r + 1] = sg;
    sg *= wrow;
    sgx *= wrow;
  }
  // dx = (g - c0 - xhat * c1) * rstd with xhat = (x - mean) * rstd.
  const double inv_n = n ? 1.0 / double(n) : 0.0;
  const A c0 = A(sg * inv_n), c1 = A(sgx * inv_n * rstd);
  if (inner == 1) {
    const T *dyr = dy + base, *xr = x + base;
    T *dxr = dx + base;
    if (p.per_row) {
      if (!dx) return;
      const A w = A(wrow);
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) {
        const A xhat = (A(xr[k]) - mh - ml) * rs;
        nn_store<ADD>(dxr, k, A((A(dyr[k]) * w - c0 - xhat * c1) * rs));
      }
    } else if (dx) {
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) {
        const A d = A(dyr[k]), xhat = (A(xr[k]) - mh - ml) * rs;
        dg[k] += d * xhat;
        db[k] += d;
        nn_store<ADD>(dxr, k, A((d * A(gamma[k]) - c0 - xhat * c1) * rs));
      }
    } else {
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) {
        const A d = A(dyr[k]);
        dg[k] += d * (A(xr[k]) - mh - ml) * rs;
        db[k] += d;
      }
    }
  } else {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t e = base + k * inner;
      const A d = A(dy[e]), xhat = (A(x[e]) - mh - ml) * rs;
      if (!p.per_row) {
        dg[k] += d * xhat;
        db[k] += d;
      }
      if (dx) {
        const A w = p.per_row ? A(wrow) : A(gamma[k]);
        nn_store<ADD>(dx, e, A((d * w - c0 - xhat * c1) * rs));
      }
    }
  }
}

}  // namespace MX_RN_NS
}  // namespace mxop
