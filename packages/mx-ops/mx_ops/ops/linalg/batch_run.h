// The linalg kernels' batch split (_linalg_blas.pxi's split_batch): the
// matrices of a batch on the process-wide thread pool (src/parallel.h), as
// the other families split their work.  Cython cannot hand pool_run a
// lambda, so a matrix's work is a C function of the call's context.  This
// replaced Cython's prange: an OpenMP team of linalg's own beside the pool
// was a second set of threads spinning on the same cores, and an OpenMP
// region waits for every worker, however late the OS wakes it.
#ifndef MX_OPS_LINALG_BATCH_RUN_H_
#define MX_OPS_LINALG_BATCH_RUN_H_

#include <atomic>
#include <cstdint>

#include "parallel.h"

namespace mxop {

// One matrix's work: nonzero when it failed (LAPACK's info, out of memory).
typedef int (*LinalgItem)(const void *ctx, int64_t i);

// Runs fn(ctx, i) for every i in [0, n) on up to nt threads of the pool
// (the caller among them), handed out in kRangesPerThread contiguous ranges
// per thread as parallel_for_cost does (a pool item per matrix would cost
// two shared atomics per 32 x 32 matrix); returns how many items failed.
static inline int64_t linalg_batch_run(int nt, int64_t n, LinalgItem fn, const void *ctx) {
  const int64_t wanted = kRangesPerThread * (nt > 1 ? nt : 1);
  const int64_t step = (n + wanted - 1) / wanted;      // 0 only when n is 0
  const int64_t ranges = step > 0 ? (n + step - 1) / step : 0;
  std::atomic<int64_t> failed{0};
  auto body = [&](int, int64_t r) {
    int64_t bad = 0;
    for (int64_t i = r * step, e = i + step < n ? i + step : n; i < e; ++i)
      bad += fn(ctx, i) != 0;
    if (bad) failed.fetch_add(bad, std::memory_order_relaxed);
  };
  pool_run(nt, ranges, body);
  return failed.load(std::memory_order_relaxed);
}

}  // namespace mxop
#endif  // MX_OPS_LINALG_BATCH_RUN_H_
