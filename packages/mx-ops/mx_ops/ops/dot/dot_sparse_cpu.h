// dot with a sparse operand on the CPU (MXNet's DotForwardCsr*/DotDnsCsr*
// kernels): csr x dense, csr x row_sparse, csr.T x dense / row_sparse
// (a scatter by column ranges), dense x csr and dense x csr.T.  float32 and
// float64; indptr and indices are int64.
//
// Work is split by output rows over one team (parallel.h): a thread owns
// whole output rows, so there are no atomics, and each element is summed
// in the order of the stored entries whatever the number of threads.  The
// scatter of csr.T x dense gives each thread the output rows of one range
// of the csr's columns: it scans the csr in row order (B's rows stream in
// order) and adds only its columns' terms, so each output element sums its
// terms in source row order, without atomics, whatever the split; a count
// pass first finds the columns with entries (the row_sparse output's
// rows) and checks every column index.
#ifndef MX_OPS_DOT_SPARSE_CPU_H_
#define MX_OPS_DOT_SPARSE_CPU_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dtype.h"
#include "isa.h"
#include "parallel.h"

// The row loops, compiled per instruction set (isa.h): the inner loop over
// the dense columns is a plain axpy that 32- or 64-byte vectors speed up.
#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define MX_SPDOT_NS spdot_avx512
#define MX_SPDOT_VEC 64
#include "dot_sparse_isa.h"
#undef MX_SPDOT_VEC
#undef MX_SPDOT_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define MX_SPDOT_NS spdot_avx2
#define MX_SPDOT_VEC 32
#include "dot_sparse_isa.h"
#undef MX_SPDOT_VEC
#undef MX_SPDOT_NS
#pragma GCC pop_options
#endif

#define MX_SPDOT_NS spdot_generic
#define MX_SPDOT_VEC 16
#include "dot_sparse_isa.h"
#undef MX_SPDOT_VEC
#undef MX_SPDOT_NS

// ok = NS::FN<T>(...) && ok, FN of the instruction set in use.
#if MX_MULTI_ISA
#define MX_SPDOT_CALL(ok, FN, T, ...)                                          \
  switch (cpu_isa()) {                                                         \
    case ISA_AVX512: ok = spdot_avx512::FN<T>(__VA_ARGS__) && ok; break;       \
    case ISA_AVX2: ok = spdot_avx2::FN<T>(__VA_ARGS__) && ok; break;           \
    default: ok = spdot_generic::FN<T>(__VA_ARGS__) && ok; break;              \
  }
#else
#define MX_SPDOT_CALL(ok, FN, T, ...) ok = spdot_generic::FN<T>(__VA_ARGS__) && ok
#endif

// NS::FN<T>(...), FN of the instruction set in use (no result).
#if MX_MULTI_ISA
#define MX_SPDOT_CALL_VOID(FN, T, ...)                                         \
  switch (cpu_isa()) {                                                         \
    case ISA_AVX512: spdot_avx512::FN<T>(__VA_ARGS__); break;                  \
    case ISA_AVX2: spdot_avx2::FN<T>(__VA_ARGS__); break;                      \
    default: spdot_generic::FN<T>(__VA_ARGS__); break;                         \
  }
#else
#define MX_SPDOT_CALL_VOID(FN, T, ...) spdot_generic::FN<T>(__VA_ARGS__)
#endif

// Runs the body with T = float or double; -1 for another dtype.  The
// kernels return 0, or kSpdotBadIndex when a csr column was out of range
// (those entries are skipped; the caller raises).
#define MX_SPDOT_SWITCH(DTYPE, T, ...)                                    \
  switch (DTYPE) {                                                        \
    case MX_FLOAT32: { typedef float T; __VA_ARGS__; } break;             \
    case MX_FLOAT64: { typedef double T; __VA_ARGS__; } break;            \
    default: return -1;                                                   \
  }

namespace mxop {

constexpr int kSpdotBadIndex = -2;

namespace spdot {

// The row of B holding row k of the operand: B dense (map null) holds
// every row; a row_sparse B holds map[k] (or -1: that row is zero).
struct RowMap {
  const int64_t *map;
  inline int64_t operator()(int64_t k) const { return map ? map[k] : k; }
};

}  // namespace spdot

// out (nout x n, rows ldo apart) = rows `sel` of csr (the rows listed, in
// order; all of them when sel is null) times B, whose operand rows map to
// B's rows through `map` (null: B dense, ldb = n).  `add` accumulates.
// nnz: the stored entries of the csr (the threads' split); bound: its
// number of columns.
static inline int spdot_csr_dense(int dtype, const void *data, const int64_t *indptr,
                                  const int64_t *indices, int64_t nnz, int64_t bound,
                                  const int64_t *sel,
                                  int64_t nout, const int64_t *map, const void *B, int64_t n,
                                  void *out, bool add) {
  MX_SPDOT_SWITCH(dtype, T, {
    const T *v = static_cast<const T *>(data);
    const T *b = static_cast<const T *>(B);
    T *o = static_cast<T *>(out);
    const int64_t cost = (nnz / (nout ? nout : 1) + 1) * n;
    const spdot::RowMap rmap{map};
    std::atomic<bool> all_ok{true};
    parallel_for_cost(nout, cost, [&](int64_t r0, int64_t r1) {
      bool ok = true;
      if (sel == nullptr) {
        MX_SPDOT_CALL(ok, csr_rows_times_dense, T, v, indptr, indices, bound, rmap, b, n, n,
                      r0, r1, o, n, add);
      } else {
        // Listed rows: one at a time, the output row r from csr row sel[r].
        for (int64_t r = r0; r < r1; ++r) {
          MX_SPDOT_CALL(ok, csr_rows_times_dense, T, v, indptr + sel[r], indices, bound, rmap,
                        b, n, n, 0, 1, o + r * n, n, add);
        }
      }
      if (!ok) all_ok.store(false, std::memory_order_relaxed);
    });
    if (!all_ok.load()) return kSpdotBadIndex;
  });
  return 0;
}

// The count pass of csr.T x B: keep[c] = 1 where column c of the csr
// (rows x cols) has an entry whose B row exists (map null: any entry), else
// 0.  Returns kSpdotBadIndex (keep undefined) for a column outside
// [0, cols).  Threads take row ranges; a flag is only ever set to 1.
static inline int spdot_columns_with_entries(const int64_t *indptr, const int64_t *indices,
                                             int64_t rows, int64_t cols, const int64_t *map,
                                             int64_t *keep) {
  std::unique_ptr<std::atomic<uint8_t>[]> seen(new std::atomic<uint8_t>[size_t(cols)]);
  for (int64_t c = 0; c < cols; ++c) seen[c].store(0, std::memory_order_relaxed);
  std::atomic<bool> all_ok{true};
  const spdot::RowMap rmap{map};
  parallel_for_cost(rows, indptr[rows] / (rows ? rows : 1) + 1, [&](int64_t r0, int64_t r1) {
    bool ok = true;
    for (int64_t i = r0; i < r1; ++i) {
      if (rmap(i) < 0) continue;
      for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
        const int64_t c = indices[e];
        if (uint64_t(c) >= uint64_t(cols)) { ok = false; continue; }
        seen[c].store(1, std::memory_order_relaxed);
      }
    }
    if (!ok) all_ok.store(false, std::memory_order_relaxed);
  });
  if (!all_ok.load()) return kSpdotBadIndex;
  for (int64_t c = 0; c < cols; ++c) keep[c] = seen[c].load(std::memory_order_relaxed);
  return 0;
}

namespace spdot {

template <typename T>
static void csr_t_dense(const T *v, const int64_t *indptr, const int64_t *indices, int64_t rows,
                        int64_t cols, const int64_t *sel, int64_t nout, const int64_t *map,
                        const T *b, int64_t n, T *o, bool add) {
  // Output row of each column (-1: not kept).
  std::vector<int64_t> omap_store(sel ? size_t(cols) : 0, -1);
  for (int64_t r = 0; sel && r < nout; ++r) omap_store[size_t(sel[r])] = r;
  const RowMap omap{sel ? omap_store.data() : nullptr}, rmap{map};
  const int nt = parallel_threads(indptr[rows] * n, cols);
  auto part = [&](int t) {
    const int64_t c0 = cols * t / nt, c1 = cols * (t + 1) / nt;
    // The output rows of [c0, c1): contiguous, as sel ascends.
    const int64_t o0 = sel ? std::lower_bound(sel, sel + nout, c0) - sel : c0;
    const int64_t o1 = sel ? std::lower_bound(sel, sel + nout, c1) - sel : c1;
    if (!add)
      for (int64_t e = o0 * n; e < o1 * n; ++e) o[e] = T(0);
    MX_SPDOT_CALL_VOID(csr_t_scatter, T, v, indptr, indices, rows, c0, c1, rmap, omap, b, n, o);
  };
  if (nt <= 1) {
    part(0);
    return;
  }
  auto range = [&](int, int64_t t) { part(int(t)); };
  pool_run(nt, nt, range);
}

}  // namespace spdot

// out = csr.T (cols x rows) times B: output row r is column sel[r] of the
// csr (sel: the ascending kept columns, nout of them; null: every column,
// nout = cols).  Each thread owns the output rows of one column range and
// scatters into them (no atomics; see csr_t_scatter for the order).
static inline int spdot_csr_t_dense(int dtype, const void *data, const int64_t *indptr,
                                    const int64_t *indices, int64_t rows, int64_t cols,
                                    const int64_t *sel, int64_t nout, const int64_t *map,
                                    const void *B, int64_t n, void *out, bool add) {
  MX_SPDOT_SWITCH(dtype, T, {
    spdot::csr_t_dense<T>(static_cast<const T *>(data), indptr, indices, rows, cols, sel, nout,
                          map, static_cast<const T *>(B), n, static_cast<T *>(out), add);
  });
  return 0;
}

// out (M x width) = dense A (M x K) times csr C (K x N), C's columns sent
// through colmap (null: the identity, width = N) into the output row.
static inline int spdot_dense_csr(int dtype, const void *A, int64_t M, int64_t K,
                                  const void *data, const int64_t *indptr,
                                  const int64_t *indices, int64_t N, const int64_t *colmap,
                                  int64_t width, void *out, bool add) {
  MX_SPDOT_SWITCH(dtype, T, {
    const T *a = static_cast<const T *>(A);
    const T *v = static_cast<const T *>(data);
    T *o = static_cast<T *>(out);
    const int64_t cost = K + indptr[K] + width;
    const spdot::RowMap cmap{colmap};
    std::atomic<bool> all_ok{true};
    parallel_for_cost(M, cost, [&](int64_t r0, int64_t r1) {
      bool ok = true;
      MX_SPDOT_CALL(ok, dense_rows_times_csr, T, a, K, K, v, indptr, indices, N, cmap, width,
                    r0, r1, o, width, add);
      if (!ok) all_ok.store(false, std::memory_order_relaxed);
    });
    if (!all_ok.load()) return kSpdotBadIndex;
  });
  return 0;
}

// out (M x N) = dense A (M x K) times the transpose of csr C (N x K).
static inline int spdot_dense_csr_t(int dtype, const void *A, int64_t M, int64_t K,
                                    const void *data, const int64_t *indptr,
                                    const int64_t *indices, int64_t N, void *out, bool add) {
  MX_SPDOT_SWITCH(dtype, T, {
    const T *a = static_cast<const T *>(A);
    const T *v = static_cast<const T *>(data);
    T *o = static_cast<T *>(out);
    const int64_t cost = indptr[N] + N;
    std::atomic<bool> all_ok{true};
    parallel_for_cost(M, cost, [&](int64_t r0, int64_t r1) {
      bool ok = true;
      MX_SPDOT_CALL(ok, dense_rows_times_csr_t, T, a, K, N, v, indptr, indices, r0, r1, o,
                    add);
      if (!ok) all_ok.store(false, std::memory_order_relaxed);
    });
    if (!all_ok.load()) return kSpdotBadIndex;
  });
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_DOT_SPARSE_CPU_H_
