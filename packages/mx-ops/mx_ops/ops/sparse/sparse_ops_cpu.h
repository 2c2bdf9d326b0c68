// CPU kernels of the sparse operators beyond cast_storage (sparse_cpu.h):
// csr (*, /) dense with broadcasting, csr/row_sparse scattered into a dense
// result (+, -), csr * csr and row_sparse * row_sparse on the common
// entries, add_n of row_sparse arrays, csr row and column reductions, csr
// slices and where with a csr condition.  Each splits its rows across the
// cores when large (parallel.h); all run without the GIL.
#ifndef MX_OPS_SPARSE_OPS_CPU_H_
#define MX_OPS_SPARSE_OPS_CPU_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "sparse_cpu.h"

namespace mxop {
namespace sparse {

enum ValueOp { kMul = 0, kDiv = 1 };

// An integer division by 0 gives 0 (NumPy's result) and by -1 the wrapped
// negation: the hardware traps on both (x / 0 and INT_MIN / -1).
template <typename T>
inline T apply_op(int op, T a, T b) {
  if (op == kMul) return T(a * b);
  if constexpr (std::is_integral<T>::value) {
    typedef typename std::make_unsigned<T>::type U;
    if (b == T(0)) return T(0);
    if (std::is_signed<T>::value && b == T(-1)) return T(U(0) - U(a));
  }
  return T(a / b);
}

// The mean stored entries per row, the threads' split of a row loop.
inline int64_t row_cost(int64_t nnz, int64_t rows) { return rows ? nnz / rows + 1 : 1; }

// out[k] = v[k] op d[i * rs + j * cs] for the entry k at (i, j): a dense
// operand broadcast over the csr (rs = 0 for a row vector, cs = 0 for a
// column vector, both 0 for a scalar, (cols, 1) for the same shape).
inline int csr_dense_op(int dtype, int op, const void *values, const int64_t *indptr,
                        const int64_t *indices, int64_t rows, const void *dense, int64_t rs,
                        int64_t cs, void *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(values);
    const T *d = static_cast<const T *>(dense);
    T *o = static_cast<T *>(out);
    parallel_for_cost(rows, row_cost(indptr[rows], rows), [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k)
          o[k] = apply_op<T>(op, v[k], d[i * rs + indices[k] * cs]);
    });
  });
  return 0;
}

// out (rows x cols, dense) += sign * the csr entries.
inline int csr_scatter_add(int dtype, const void *values, const int64_t *indptr,
                           const int64_t *indices, int64_t rows, int64_t cols, int sign,
                           void *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(values);
    T *o = static_cast<T *>(out);
    parallel_for_cost(rows, row_cost(indptr[rows], rows), [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
          T &x = o[i * cols + indices[k]];
          x = sign > 0 ? T(x + v[k]) : T(x - v[k]);
        }
    });
  });
  return 0;
}

// out (dense, rows of `width`) += sign * the kept rows.
inline int rsp_scatter_add(int dtype, const void *values, const int64_t *indices, int64_t kept,
                           int64_t width, int sign, void *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(values);
    T *o = static_cast<T *>(out);
    parallel_for_cost(kept, width, [=](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        T *row = o + indices[k] * width;
        const T *src = v + k * width;
        for (int64_t j = 0; j < width; ++j)
          row[j] = sign > 0 ? T(row[j] + src[j]) : T(row[j] - src[j]);
      }
    });
  });
  return 0;
}

// The positions of the values two sorted index lists share: ia[n], ib[n]
// (room for min(na, nb)); returns n.  Serial: one pass over both lists.
inline int64_t sorted_intersect(const int64_t *a, int64_t na, const int64_t *b, int64_t nb,
                                int64_t *ia, int64_t *ib) {
  int64_t i = 0, j = 0, n = 0;
  while (i < na && j < nb) {
    if (a[i] < b[j]) {
      ++i;
    } else if (b[j] < a[i]) {
      ++j;
    } else {
      ia[n] = i++;
      ib[n++] = j++;
    }
  }
  return n;
}

// out row k = a row ra[k] (k without ra) op b row rb[k], rows of `width`:
// row_sparse * row_sparse (ra, rb from sorted_intersect) and row_sparse *
// dense (ra null, rb the kept rows' indices).
inline int rows_op(int dtype, int op, const void *a, const int64_t *ra, const void *b,
                   const int64_t *rb, int64_t n, int64_t width, void *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *x = static_cast<const T *>(a);
    const T *y = static_cast<const T *>(b);
    T *o = static_cast<T *>(out);
    parallel_for_cost(n, width, [=](int64_t s, int64_t e) {
      for (int64_t k = s; k < e; ++k) {
        const T *xr = x + (ra ? ra[k] : k) * width, *yr = y + rb[k] * width;
        T *orow = o + k * width;
        for (int64_t j = 0; j < width; ++j) orow[j] = apply_op<T>(op, xr[j], yr[j]);
      }
    });
  });
  return 0;
}

// csr * csr, pass 1: the common columns of each row into indptr[1..rows],
// then prefix sums; returns the output's nnz.
inline int64_t csr_intersect_count(const int64_t *ap, const int64_t *ai, const int64_t *bp,
                                   const int64_t *bi, int64_t rows, int64_t cost,
                                   int64_t *indptr) {
  parallel_for_cost(rows, cost, [=](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = ap[r], j = bp[r], n = 0;
      while (i < ap[r + 1] && j < bp[r + 1]) {
        const int64_t x = ai[i], y = bi[j];
        n += x == y;
        i += x <= y;
        j += y <= x;
      }
      indptr[r + 1] = n;
    }
  });
  return prefix_sum(indptr, rows);
}

// Pass 2: the common entries' columns and products.
inline int csr_intersect_fill(int dtype, const void *av, const int64_t *ap, const int64_t *ai,
                              const void *bv, const int64_t *bp, const int64_t *bi,
                              int64_t rows, int64_t cost, const int64_t *indptr,
                              int64_t *indices, void *data) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *a = static_cast<const T *>(av);
    const T *bb = static_cast<const T *>(bv);
    T *out = static_cast<T *>(data);
    parallel_for_cost(rows, cost, [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t i = ap[r], j = bp[r], k = indptr[r];
        while (i < ap[r + 1] && j < bp[r + 1]) {
          const int64_t x = ai[i], y = bi[j];
          if (x == y) { indices[k] = x; out[k++] = T(a[i] * bb[j]); }
          i += x <= y;
          j += y <= x;
        }
      }
    });
  });
  return 0;
}

// add_n of row_sparse arrays, pass 1: a merge of the inputs' sorted row
// indices into out_indices (room for their total), and pos[off[t] + k], the
// output position of input t's k-th row; returns the output's rows.  It
// visits each input's head per output row (O(rows out x inputs)), never the
// array's full height, which add_n of a few sparse gradients of a large
// embedding would pay.  Serial: the merge is a chain of comparisons.
inline int64_t rsp_sum_merge(const int64_t *const *indices, const int64_t *kept, int n,
                             const int64_t *off, int64_t *out_indices, int64_t *pos) {
  std::vector<int64_t> cur(n, 0);
  int64_t k = 0;
  for (;;) {
    int64_t low = -1;
    for (int t = 0; t < n; ++t)
      if (cur[t] < kept[t] && (low < 0 || indices[t][cur[t]] < low)) low = indices[t][cur[t]];
    if (low < 0) return k;
    for (int t = 0; t < n; ++t)
      if (cur[t] < kept[t] && indices[t][cur[t]] == low) pos[off[t] + cur[t]++] = k;
    out_indices[k++] = low;
  }
}

// Pass 2: the output rows zeroed, then each input's rows added at their
// positions (one input at a time: its rows are distinct, so its threads
// never write one row twice).
inline int rsp_sum_fill(int dtype, const void *const *values, const int64_t *kept, int n,
                        int64_t rows_out, int64_t width, const int64_t *off, const int64_t *pos,
                        void *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    T *o = static_cast<T *>(out);
    parallel_for_cost(rows_out, width, [=](int64_t b, int64_t e) {
      std::memset(o + b * width, 0, (e - b) * width * sizeof(T));
    });
    for (int t = 0; t < n; ++t) {
      const T *v = static_cast<const T *>(values[t]);
      const int64_t *at = pos + off[t];
      parallel_for_cost(kept[t], width, [=](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          T *row = o + at[k] * width;
          const T *src = v + k * width;
          for (int64_t j = 0; j < width; ++j) row[j] = T(row[j] + src[j]);
        }
      });
    }
  });
  return 0;
}

// Sums of the csr's values (squared with `square`) per row (axis 1) into
// out[rows], or per column (axis 0) into out[cols], in double (integers
// are exact below 2^53; the caller casts).  Columns: serial over the
// entries, since threads would each need a row of `cols` partial sums.
inline int csr_reduce(int dtype, const void *values, const int64_t *indptr,
                      const int64_t *indices, int64_t rows, int64_t cols, int axis, int square,
                      double *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(values);
    if (axis == 1) {
      parallel_for_cost(rows, row_cost(indptr[rows], rows), [=](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          double s = 0;
          for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
            const double x = double(v[k]);
            s += square ? x * x : x;
          }
          out[i] = s;
        }
      });
    } else {
      std::fill(out, out + cols, 0.0);
      for (int64_t k = 0; k < indptr[rows]; ++k) {
        const double x = double(v[k]);
        out[indices[k]] += square ? x * x : x;
      }
    }
  });
  return 0;
}

// The csr slice [r0, r1) x [c0, c1), pass 1: each output row's entries
// (a binary search in each sorted row) into indptr[1..], prefix sums.
inline int64_t csr_slice_count(const int64_t *ip, const int64_t *ix, int64_t r0, int64_t r1,
                               int64_t c0, int64_t c1, int64_t *indptr, int64_t *first) {
  const int64_t rows = r1 - r0;
  parallel_for_cost(rows, 16, [=](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t *lo = std::lower_bound(ix + ip[r0 + r], ix + ip[r0 + r + 1], c0);
      const int64_t *hi = std::lower_bound(lo, ix + ip[r0 + r + 1], c1);
      first[r] = lo - ix;
      indptr[r + 1] = hi - lo;
    }
  });
  return prefix_sum(indptr, rows);
}

// Pass 2: the entries, columns shifted by c0.
inline int csr_slice_fill(int dtype, const void *values, const int64_t *ix, int64_t rows,
                          int64_t c0, const int64_t *indptr, const int64_t *first,
                          int64_t *indices, void *data) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(values);
    T *o = static_cast<T *>(data);
    parallel_for_cost(rows, row_cost(indptr[rows], rows), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        for (int64_t k = indptr[r], s = first[r]; k < indptr[r + 1]; ++k, ++s) {
          indices[k] = ix[s] - c0;
          o[k] = v[s];
        }
    });
  });
  return 0;
}

// where(cond csr, x, y), out holding y already: x's value where the
// condition stores a nonzero.  The condition's dtype may differ from x's.
template <typename C>
inline int csr_where_typed(int dtype, const C *c, const int64_t *indptr, const int64_t *indices,
                           int64_t rows, int64_t cols, const void *x, void *out) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *xv = static_cast<const T *>(x);
    T *o = static_cast<T *>(out);
    parallel_for_cost(rows, row_cost(indptr[rows], rows), [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k)
          if (c[k] != C(0)) o[i * cols + indices[k]] = xv[i * cols + indices[k]];
    });
  });
  return 0;
}

inline int csr_where(int cond_dtype, const void *cond, const int64_t *indptr,
                     const int64_t *indices, int64_t rows, int64_t cols, int dtype,
                     const void *x, void *out) {
  MX_SPARSE_SWITCH(cond_dtype, C, {
    return csr_where_typed<C>(dtype, static_cast<const C *>(cond), indptr, indices, rows,
                              cols, x, out);
  });
  return 0;
}

}  // namespace sparse
}  // namespace mxop
#endif  // MX_OPS_SPARSE_OPS_CPU_H_
