// Splitting one large kernel across the cores (MXNet's OpenMP use inside
// an operator).  An engine worker runs the kernel; above a size threshold
// parallel_for hands contiguous ranges to the process-wide thread pool
// (core/pool.h), so a 10M element add uses every core instead of one.
// Small arrays stay on the calling thread: a job costs microseconds, which
// the per-op budget cannot pay.  The pool's caller takes ranges itself and
// never waits for a worker that has not started; after fork() the child
// runs everything serially (the workers do not survive a fork).
//
// Every extension module compiles this header but reaches the same pool:
// when the module is loaded (its static initializers run inside Python's
// import, with the GIL held) it imports mx_ops.core._pool and takes the
// PoolApi table from its capsule.  A module that cannot (no interpreter,
// a table of another layout) runs its kernels serially.
#ifndef MX_OPS_PARALLEL_H_
#define MX_OPS_PARALLEL_H_

#include <Python.h>

#include <cstdint>

#include "pool_api.h"

namespace mxop {

inline const PoolApi *load_pool_api() {
  if (!Py_IsInitialized()) return nullptr;
  const PoolApi *table = nullptr;
  PyObject *module = PyImport_ImportModule(kPoolModule);
  PyObject *capsule = module ? PyObject_GetAttrString(module, kPoolCapsuleAttr) : nullptr;
  if (capsule)
    table = static_cast<const PoolApi *>(PyCapsule_GetPointer(capsule, kPoolCapsuleName));
  Py_XDECREF(capsule);
  Py_XDECREF(module);
  if (PyErr_Occurred()) {
    // Import must go on (kernels still run, serially); say why, once.
    PyErr_WriteUnraisable(nullptr);
    table = nullptr;
  }
  return table && table->abi == kPoolAbi ? table : nullptr;
}

// This module's handle on the pool (null: run serially).
static const PoolApi *const kPool = load_pool_api();

// The most threads a kernel may use (the pool's max-threads for the calling
// thread).  Workspace sizes are computed from it.
static inline int max_threads() { return kPool ? kPool->max_threads() : 1; }

// Sets the calling thread's max-threads (tests run kernels on 1..n threads
// whatever the machine); returns the previous value.
static inline int set_max_threads(int n) { return kPool ? kPool->set_max_threads(n) : 1; }

// Threads for `work` element-visits: 1 below the threshold, inside a pool
// job already, or in a forked child; never more than `items` (the units
// that cannot be split).
static inline int parallel_threads(int64_t work, int64_t items) {
  return kPool ? kPool->threads_for(work, items) : 1;
}

// Runs body(t, i) for i in [0, n) on up to nt threads of the pool, items
// claimed one at a time (thread t first from the t-th of nt equal segments);
// t < nt names the thread (0: the caller) and so the workspace slab it may use.
template <typename B>
static inline void pool_run(int nt, int64_t n, B &body) {
  if (nt <= 1 || n <= 1 || !kPool) {
    for (int64_t i = 0; i < n; ++i) body(0, i);
    return;
  }
  kPool->run(nt, n, [](void *ctx, int t, int64_t i) { (*static_cast<B *>(ctx))(t, i); }, &body);
}

// Ranges handed out per thread: a worker that joins late still finds work,
// and the caller is never left with one thread's whole share.
constexpr int64_t kRangesPerThread = 4;

// Calls body(begin, end) over [0, n) in contiguous ranges, where each of
// the n items costs `cost` element-visits; with cost 1 (an elementwise
// loop) range boundaries fall on multiples of 64 items so that no two
// threads write one cache line of the output.  Which thread runs a range
// is not fixed: a body must not depend on it.
template <typename F>
static inline void parallel_for_cost(int64_t n, int64_t cost, F body) {
  const int nt = parallel_threads(n * cost, n);
  if (nt <= 1) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
  const int64_t align = cost == 1 ? 64 : 1;
  const int64_t wanted = kRangesPerThread * nt;
  const int64_t step = ((n + wanted - 1) / wanted + align - 1) / align * align;
  const int64_t ranges = (n + step - 1) / step;
  auto range = [&](int, int64_t i) {
    const int64_t b = i * step, e = b + step < n ? b + step : n;
    body(b, e);
  };
  pool_run(nt, ranges, range);
}

// An elementwise loop over n elements.
template <typename F>
static inline void parallel_for(int64_t n, F body) { parallel_for_cost(n, 1, body); }

}  // namespace mxop
#endif  // MX_OPS_PARALLEL_H_
