// One instruction set's copy of the sparse dot's row loops (see
// dot_sparse_cpu.h, which includes this file once per instruction set
// inside `#pragma GCC target` regions, with MX_SPDOT_NS naming the
// namespace).  No include guard on purpose.
//
// Every loop here writes whole output rows that only its caller's thread
// owns, and sums each output element in the order of the stored entries:
// the results do not depend on the number of threads.

namespace mxop {
namespace MX_SPDOT_NS {

// Columns of one output row summed at once: eight vectors of this
// instruction set (MX_SPDOT_VEC bytes each), held in registers while the
// sparse row's entries stream past (8 independent FMA chains cover the
// FMA latency).  Narrower tiles take the remaining columns.
template <typename T>
constexpr int64_t spdot_tile() { return 8 * MX_SPDOT_VEC / int64_t(sizeof(T)); }

// Entries ahead whose B rows are prefetched: B's rows are read in random
// order, from L2 or L3.
constexpr int64_t kSpdotPrefetch = 8;

// out[0, W) (+)= sum over entries [e0, e1) of data[e] * B[brow(col), j0 + j];
// false if a column is outside [0, bound).
template <int64_t W, typename T, typename BRow>
static inline bool row_tile(const T *data, const int64_t *indices, int64_t e0, int64_t e1,
                            int64_t bound, BRow brow, const T *B, int64_t ldb, int64_t j0,
                            T *out, bool add) {
  T acc[W];
  for (int64_t j = 0; j < W; ++j) acc[j] = T(0);
  bool ok = true;
  for (int64_t e = e0; e < e1; ++e) {
    if (e + kSpdotPrefetch < e1) {
      const int64_t c = indices[e + kSpdotPrefetch];
      if (uint64_t(c) < uint64_t(bound)) {
        const int64_t k = brow(c);
        if (k >= 0) __builtin_prefetch(B + k * ldb + j0);
      }
    }
    const int64_t c = indices[e];
    if (uint64_t(c) >= uint64_t(bound)) { ok = false; continue; }
    const int64_t k = brow(c);
    if (k < 0) continue;
    const T v = data[e];
    const T *__restrict b = B + k * ldb + j0;
    for (int64_t j = 0; j < W; ++j) acc[j] += v * b[j];
  }
  if (add) {
    for (int64_t j = 0; j < W; ++j) out[j] += acc[j];
  } else {
    for (int64_t j = 0; j < W; ++j) out[j] = acc[j];
  }
  return ok;
}

// out rows [r0, r1) (ldo apart) = the sparse rows' products with dense rows
// of B (ldb apart): out[r, :] = sum over entries e of row r of
// data[e] * B[brow(e), :], where brow maps an entry's column to B's row, or
// -1 for a row of B that is all zeros (row_sparse B).  `add` accumulates.
// Returns false if a column is outside [0, bound) (the entry is skipped).
template <typename T, typename BRow>
static bool csr_rows_times_dense(const T *data, const int64_t *indptr, const int64_t *indices,
                                 int64_t bound, BRow brow, const T *B, int64_t ldb, int64_t n,
                                 int64_t r0, int64_t r1, T *out, int64_t ldo, bool add) {
  constexpr int64_t W = spdot_tile<T>();
  bool ok = true;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t e0 = indptr[r], e1 = indptr[r + 1];
    T *o = out + r * ldo;
    int64_t j0 = 0;
    for (; j0 + W <= n; j0 += W)
      ok = row_tile<W>(data, indices, e0, e1, bound, brow, B, ldb, j0, o + j0, add) && ok;
    if (j0 + W / 2 <= n) {
      ok = row_tile<W / 2>(data, indices, e0, e1, bound, brow, B, ldb, j0, o + j0, add) && ok;
      j0 += W / 2;
    }
    if (j0 + W / 4 <= n) {
      ok = row_tile<W / 4>(data, indices, e0, e1, bound, brow, B, ldb, j0, o + j0, add) && ok;
      j0 += W / 4;
    }
    if (j0 + W / 8 <= n) {
      ok = row_tile<W / 8>(data, indices, e0, e1, bound, brow, B, ldb, j0, o + j0, add) && ok;
      j0 += W / 8;
    }
    for (; j0 < n; ++j0)        // fewer columns than one vector
      ok = row_tile<1>(data, indices, e0, e1, bound, brow, B, ldb, j0, o + j0, add) && ok;
  }
  return ok;
}

// The scatter of csr.T x B for the output rows of csr columns [c0, c1):
// out[omap(c), :] += data[e] * B[brow(i), :] for each entry e = (i, c) of
// the csr (rows x ...) in that column range, i ascending, so an output row
// sums its terms in source row order whatever the split.  B's rows stream
// in order; the thread's output rows stay in its caches.  The columns were
// range-checked by the count pass (spdot_columns_with_entries).
template <typename T, typename BRow, typename OMap>
static void csr_t_scatter(const T *data, const int64_t *indptr, const int64_t *indices,
                          int64_t rows, int64_t c0, int64_t c1, BRow brow, OMap omap,
                          const T *B, int64_t n, T *out) {
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t k = brow(i);
    if (k < 0) continue;
    const T *__restrict b = B + k * n;
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t c = indices[e];
      if (c < c0 || c >= c1) continue;
      const int64_t o = omap(c);
      if (o < 0) continue;
      T *__restrict y = out + o * n;
      const T v = data[e];
      for (int64_t j = 0; j < n; ++j) y[j] += v * b[j];
    }
  }
}

// out rows [r0, r1) of dense A (M x K, lda) times csr C (K x N):
// out[i, :] = sum_k A[i, k] * C[k, :], a scatter of each row of C into the
// (zeroed) output row, k ascending.  Output rows are `ldo` apart and their
// columns go through `col` (the identity into a dense row; into the
// union of C's columns for a csr output).  Returns false if a column of
// C is outside [0, bound).
template <typename T, typename Col>
static bool dense_rows_times_csr(const T *A, int64_t lda, int64_t K, const T *data,
                                 const int64_t *indptr, const int64_t *indices, int64_t bound,
                                 Col col, int64_t width, int64_t r0, int64_t r1, T *out,
                                 int64_t ldo, bool add) {
  bool ok = true;
  for (int64_t i = r0; i < r1; ++i) {
    T *o = out + i * ldo;
    if (!add)
      for (int64_t j = 0; j < width; ++j) o[j] = T(0);
    const T *a = A + i * lda;
    for (int64_t k = 0; k < K; ++k) {
      const T v = a[k];
      if (v == T(0)) continue;
      for (int64_t e = indptr[k]; e < indptr[k + 1]; ++e) {
        const int64_t c = indices[e];
        if (uint64_t(c) >= uint64_t(bound)) { ok = false; continue; }
        o[col(c)] += v * data[e];
      }
    }
  }
  return ok;
}

// out rows [r0, r1) of dense A (M x K, lda) times the transpose of csr C
// (N x K): out[i, j] = sum over row j of C of A[i, col] * value, a gather.
// Returns false if a column of C is outside [0, lda).
template <typename T>
static bool dense_rows_times_csr_t(const T *A, int64_t lda, int64_t N, const T *data,
                                   const int64_t *indptr, const int64_t *indices, int64_t r0,
                                   int64_t r1, T *out, bool add) {
  bool ok = true;
  for (int64_t i = r0; i < r1; ++i) {
    const T *a = A + i * lda;
    T *o = out + i * N;
    for (int64_t j = 0; j < N; ++j) {
      T s = T(0);
      for (int64_t e = indptr[j]; e < indptr[j + 1]; ++e) {
        const int64_t c = indices[e];
        if (uint64_t(c) >= uint64_t(lda)) { ok = false; continue; }
        s += a[c] * data[e];
      }
      o[j] = add ? T(o[j] + s) : s;
    }
  }
  return ok;
}

}  // namespace MX_SPDOT_NS
}  // namespace mxop
