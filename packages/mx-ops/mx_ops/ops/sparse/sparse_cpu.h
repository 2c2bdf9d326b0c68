// CPU kernels of the sparse storage types: cast_storage in two passes
// (count, then fill, each split across the cores by rows), the format
// checks (the first bad position, serial) and the CSR union kernels of
// elemwise_add/sub.  Components: indptr and indices are int64 (MXNet's
// kInt64 aux type); values are any of the seven dtypes.
#ifndef MX_OPS_SPARSE_CPU_H_
#define MX_OPS_SPARSE_CPU_H_

#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "parallel.h"

namespace mxop {
namespace sparse {

// Runs the body with T as the element type of `dtype`; -1 for another.
#define MX_SPARSE_SWITCH(DTYPE, T, ...)                                   \
  switch (DTYPE) {                                                        \
    case MX_FLOAT32: { typedef float T; __VA_ARGS__; } break;             \
    case MX_FLOAT64: { typedef double T; __VA_ARGS__; } break;            \
    case MX_FLOAT16: { typedef ::mxop::half_t T; __VA_ARGS__; } break;    \
    case MX_UINT8: { typedef uint8_t T; __VA_ARGS__; } break;             \
    case MX_INT8: { typedef int8_t T; __VA_ARGS__; } break;               \
    case MX_INT32: { typedef int32_t T; __VA_ARGS__; } break;             \
    case MX_INT64: { typedef int64_t T; __VA_ARGS__; } break;             \
    default: return -1;                                                   \
  }

// indptr[0] = 0, indptr[i + 1] = the nonzeros of rows 0..i; returns nnz.
inline int64_t prefix_sum(int64_t *indptr, int64_t rows) {
  indptr[0] = 0;
  for (int64_t i = 0; i < rows; ++i) indptr[i + 1] += indptr[i];
  return indptr[rows];
}

// Pass 1 of dense -> csr: the nonzeros of each row into indptr[1..rows],
// then their prefix sums.  Returns nnz (-1 for an unknown dtype).
inline int64_t dns_csr_count(int dtype, const void *dns, int64_t rows, int64_t cols,
                             int64_t *indptr) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *x = static_cast<const T *>(dns);
    parallel_for_cost(rows, cols, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t n = 0;
        for (int64_t j = 0; j < cols; ++j) n += x[i * cols + j] != T(0);
        indptr[i + 1] = n;
      }
    });
  });
  return prefix_sum(indptr, rows);
}

// Pass 2: each row's column indices and values at indptr[i].
inline int dns_csr_fill(int dtype, const void *dns, int64_t rows, int64_t cols,
                        const int64_t *indptr, int64_t *indices, void *data) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *x = static_cast<const T *>(dns);
    T *out = static_cast<T *>(data);
    parallel_for_cost(rows, cols, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t k = indptr[i];
        for (int64_t j = 0; j < cols; ++j) {
          const T v = x[i * cols + j];
          if (v != T(0)) { indices[k] = j; out[k] = v; ++k; }
        }
      }
    });
  });
  return 0;
}

// Pass 1 of dense -> row_sparse: keep[i] = 1 where row i has a nonzero,
// then keep[i] = the number of kept rows before i.  Returns the kept rows.
inline int64_t dns_rsp_count(int dtype, const void *dns, int64_t rows, int64_t width,
                             int64_t *keep) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *x = static_cast<const T *>(dns);
    parallel_for_cost(rows, width, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t any = 0;
        for (int64_t j = 0; j < width && !any; ++j) any = x[i * width + j] != T(0);
        keep[i + 1] = any;
      }
    });
  });
  return prefix_sum(keep, rows);
}

// Pass 2: the kept rows' indices and values (keep: the prefix sums above).
inline int dns_rsp_fill(int dtype, const void *dns, int64_t rows, int64_t width,
                        const int64_t *keep, int64_t *indices, void *data) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *x = static_cast<const T *>(dns);
    T *out = static_cast<T *>(data);
    parallel_for_cost(rows, width, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (keep[i + 1] == keep[i]) continue;
        const int64_t k = keep[i];
        indices[k] = i;
        std::memcpy(out + k * width, x + i * width, width * sizeof(T));
      }
    });
  });
  return 0;
}

// csr -> dense: out (rows x cols) zeroed, then each row's values scattered.
inline int csr_dns(int dtype, const void *data, const int64_t *indptr, const int64_t *indices,
                   int64_t rows, int64_t cols, void *dns) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(data);
    T *out = static_cast<T *>(dns);
    parallel_for_cost(rows, cols, [=](int64_t b, int64_t e) {
      std::memset(out + b * cols, 0, (e - b) * cols * sizeof(T));
      for (int64_t i = b; i < e; ++i)
        for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) out[i * cols + indices[k]] = v[k];
    });
  });
  return 0;
}

// row_sparse -> dense: rows not kept are zero, kept rows copied.
inline int rsp_dns(int dtype, const void *data, const int64_t *indices, int64_t kept,
                   int64_t rows, int64_t width, void *dns) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(data);
    T *out = static_cast<T *>(dns);
    parallel_for_cost(rows, width, [=](int64_t b, int64_t e) {
      std::memset(out + b * width, 0, (e - b) * width * sizeof(T));
    });
    parallel_for_cost(kept, width, [=](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k)
        std::memcpy(out + indices[k] * width, v + k * width, width * sizeof(T));
    });
  });
  return 0;
}

// The format checks: 0 when valid, else a code (below) and *pos, the
// first bad position.  They read the indices only; nothing is trusted.
enum FormatError {
  kFormatOk = 0,
  kIndptrLength = 1,     // indptr has not rows + 1 entries (pos: its length)
  kIndptrStart = 2,      // indptr[0] != 0
  kIndptrDecreasing = 3, // indptr[pos] < indptr[pos - 1]
  kIndptrEnd = 4,        // indptr[rows] != nnz (pos: rows)
  kIndexRange = 5,       // indices[pos] < 0 or >= the bound
  kIndexOrder = 6,       // indices[pos] <= indices[pos - 1] in one row: unsorted or duplicate
};

inline int csr_check(const int64_t *indptr, int64_t indptr_len, const int64_t *indices,
                     int64_t nnz, int64_t rows, int64_t cols, int64_t *pos) {
  if (indptr_len != rows + 1) { *pos = indptr_len; return kIndptrLength; }
  if (indptr[0] != 0) { *pos = 0; return kIndptrStart; }
  for (int64_t i = 1; i <= rows; ++i)
    if (indptr[i] < indptr[i - 1]) { *pos = i; return kIndptrDecreasing; }
  if (indptr[rows] != nnz) { *pos = rows; return kIndptrEnd; }
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
      if (indices[k] < 0 || indices[k] >= cols) { *pos = k; return kIndexRange; }
      if (k > indptr[i] && indices[k] <= indices[k - 1]) { *pos = k; return kIndexOrder; }
    }
  }
  return kFormatOk;
}

inline int rsp_check(const int64_t *indices, int64_t kept, int64_t rows, int64_t *pos) {
  for (int64_t k = 0; k < kept; ++k) {
    if (indices[k] < 0 || indices[k] >= rows) { *pos = k; return kIndexRange; }
    if (k > 0 && indices[k] <= indices[k - 1]) { *pos = k; return kIndexOrder; }
  }
  return kFormatOk;
}

// csr (op) csr in one merge.  Row r's union is at most its two rows'
// lengths long, so it is written to a scratch at ap[r] + bp[r] (rows never
// overlap there) and its length to indptr[r + 1]; prefix sums then give the
// output's indptr, and csr_union_compact moves each row to its place.  One
// merge instead of a counting merge and a filling merge: the merge is the
// cost (its loads feed its own next step), a row's copy is not.  `cost` is
// the mean entries per row (the threads' split).
template <typename T>
inline void csr_union_rows(const T *a, const int64_t *ap, const int64_t *ai, const T *bb,
                           const int64_t *bp, const int64_t *bi, int64_t b, int64_t e,
                           int64_t *indptr, int64_t *sidx, T *sval) {
  for (int64_t r = b; r < e; ++r) {
    int64_t i = ap[r], j = bp[r];
    const int64_t ie = ap[r + 1], je = bp[r + 1], k0 = i + j;
    int64_t k = k0;
    // Branch-free while both rows last (selects, not jumps: the order of the
    // two rows' columns is data, which a branch predictor cannot learn);
    // an entry of one row alone adds zero to its value, as MXNet's op(a, 0).
    while (i < ie && j < je) {
      const int64_t x = ai[i], y = bi[j];
      const bool ta = x <= y, tb = y <= x;
      const T va = ta ? a[i] : T(0), vb = tb ? bb[j] : T(0);
      sidx[k] = ta ? x : y;
      sval[k++] = T(va + vb);
      i += ta;
      j += tb;
    }
    for (; i < ie; ++i, ++k) { sidx[k] = ai[i]; sval[k] = a[i]; }
    for (; j < je; ++j, ++k) { sidx[k] = bi[j]; sval[k] = bb[j]; }
    indptr[r + 1] = k - k0;
  }
}

// `bv` holds b's values already negated for a subtraction (the caller's);
// explicit zeros are kept, as MXNet's.  Returns the output's nnz (-1 for an
// unknown dtype).
inline int64_t csr_union_merge(int dtype, const void *av, const int64_t *ap, const int64_t *ai,
                               const void *bv, const int64_t *bp, const int64_t *bi,
                               int64_t rows, int64_t cost, int64_t *indptr, int64_t *sidx,
                               void *sval) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *a = static_cast<const T *>(av);
    const T *bb = static_cast<const T *>(bv);
    T *vals = static_cast<T *>(sval);
    parallel_for_cost(rows, cost, [=](int64_t b, int64_t e) {
      csr_union_rows<T>(a, ap, ai, bb, bp, bi, b, e, indptr, sidx, vals);
    });
    return prefix_sum(indptr, rows);
  });
  return -1;
}

// Each row of the scratch (at ap[r] + bp[r]) to its place at indptr[r].
inline int csr_union_compact(int dtype, const int64_t *ap, const int64_t *bp, int64_t rows,
                             int64_t cost, const int64_t *indptr, const int64_t *sidx,
                             const void *sval, int64_t *indices, void *data) {
  MX_SPARSE_SWITCH(dtype, T, {
    const T *from = static_cast<const T *>(sval);
    T *to = static_cast<T *>(data);
    parallel_for_cost(rows, cost, [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t src = ap[r] + bp[r], dst = indptr[r], n = indptr[r + 1] - dst;
        std::memcpy(indices + dst, sidx + src, n * sizeof(int64_t));
        std::memcpy(to + dst, from + src, n * sizeof(T));
      }
    });
  });
  return 0;
}

}  // namespace sparse
}  // namespace mxop
#endif  // MX_OPS_SPARSE_CPU_H_
