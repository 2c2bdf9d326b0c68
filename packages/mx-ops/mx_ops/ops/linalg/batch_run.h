// The linalg kernels' batch split (_linalg_blas.pxi's split_batch): one
// item per matrix on the process-wide thread pool (src/parallel.h), as the
// other families split theirs.  Cython cannot hand pool_run a lambda, so
// the item is a C function of the call's context.  This replaced Cython's
// prange: an OpenMP team of linalg's own beside the pool oversubscribed
// the cores, and its workers woke late after an idle pause.
#ifndef MX_OPS_LINALG_BATCH_RUN_H_
#define MX_OPS_LINALG_BATCH_RUN_H_

#include <atomic>
#include <cstdint>

#include "parallel.h"

namespace mxop {

// One matrix's work: nonzero when it failed (LAPACK's info, out of memory).
typedef int (*LinalgItem)(const void *ctx, int64_t i);

// Runs fn(ctx, i) for every i in [0, n) on up to nt threads of the pool
// (the caller among them); returns how many items failed.
static inline int64_t linalg_batch_run(int nt, int64_t n, LinalgItem fn, const void *ctx) {
  std::atomic<int64_t> failed{0};
  auto body = [&](int, int64_t i) {
    if (fn(ctx, i) != 0) failed.fetch_add(1, std::memory_order_relaxed);
  };
  pool_run(nt, n, body);
  return failed.load(std::memory_order_relaxed);
}

}  // namespace mxop
#endif  // MX_OPS_LINALG_BATCH_RUN_H_
