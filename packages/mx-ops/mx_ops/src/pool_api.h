// The table through which every mx-ops extension module reaches the one
// process-wide thread pool (core/pool.h, owned by mx_ops.core._pool, which
// hands the table out in a PyCapsule).  Each module is its own shared
// object with its own statics, so a pool defined in a header would be one
// pool per module; the capsule makes it one per process.
#ifndef MX_OPS_POOL_API_H_
#define MX_OPS_POOL_API_H_

#include <cstdint>

namespace mxop {

// Raised whenever the table's layout or meaning changes: a module built
// against another layout runs its kernels serially instead of misreading it.
constexpr int kPoolAbi = 1;

// The module that owns the pool and the name of its capsule attribute.
constexpr const char *kPoolModule = "mx_ops.core._pool";
constexpr const char *kPoolCapsuleAttr = "_C_API";
constexpr const char *kPoolCapsuleName = "mx_ops.core._pool._C_API";

// Elements below which a loop runs on one thread (about 0.1 ms of a
// memory-bound loop: much more than handing out a job).
constexpr int64_t kParallelMinElements = int64_t(1) << 17;

struct PoolApi {
  int abi;
  // The most threads a kernel called from this thread may use.
  int (*max_threads)();
  // Sets the calling thread's max_threads (n >= 1); returns the previous value.
  int (*set_max_threads)(int n);
  // Threads for `work` element-visits over `items` unsplittable units: 1
  // below kParallelMinElements, inside a pool job, or in a forked child.
  int (*threads_for)(int64_t work, int64_t items);
  // Runs fn(ctx, t, i) for every i in [0, n) on up to nt threads, items
  // claimed one at a time (thread t first from the t-th of nt equal
  // segments); t < nt names the thread (0: the caller), unique
  // among the threads of this job.  Returns when every item has run.
  void (*run)(int nt, int64_t n, void (*fn)(void *ctx, int t, int64_t i), void *ctx);
};

}  // namespace mxop
#endif  // MX_OPS_POOL_API_H_
