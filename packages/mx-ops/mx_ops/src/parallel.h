// Splitting one large kernel across the cores (MXNet's OpenMP use inside
// an operator).  An engine worker runs the kernel; above a size threshold
// parallel_for hands equal contiguous ranges to an OpenMP team, so a 10M
// element add uses every core instead of one.  Small arrays stay on the
// calling thread: a team costs microseconds, which the per-op budget
// cannot pay.  After fork() the child runs everything serially, because
// libgomp's thread pool does not survive a fork (it hangs on first use).
#ifndef MX_OPS_PARALLEL_H_
#define MX_OPS_PARALLEL_H_

#include <pthread.h>

#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mxop {

// Elements below which a loop runs on one thread (about 0.1 ms of a
// memory-bound loop: much more than a team's start-up).
constexpr int64_t kParallelMinElements = int64_t(1) << 17;

inline bool &forked_child() { static bool forked = false; return forked; }
inline void mark_forked_child() { forked_child() = true; }
[[maybe_unused]] static const int mx_atfork_registered =
    pthread_atfork(nullptr, nullptr, mark_forked_child);

// The most threads a kernel may use (OpenMP's max-threads of the calling
// thread; 1 without OpenMP).  Workspace sizes are computed from it.
static inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Sets the calling thread's OpenMP max-threads (tests run kernels on 1..n
// threads whatever the machine); returns the previous value.
static inline int set_max_threads(int n) {
  const int old = max_threads();
#ifdef _OPENMP
  if (n >= 1) omp_set_num_threads(n);
#else
  (void)n;
#endif
  return old;
}

// Threads for `work` element-visits: 1 without OpenMP, below the threshold,
// inside a parallel region already, or in a forked child; never more than
// `items` (the units that cannot be split).
static inline int parallel_threads(int64_t work, int64_t items) {
#ifdef _OPENMP
  if (work < kParallelMinElements || items < 2 || forked_child() || omp_in_parallel())
    return 1;
  int64_t nt = omp_get_max_threads();
  const int64_t useful = work / (kParallelMinElements / 2);
  if (useful < nt) nt = useful;
  return int(items < nt ? items : nt);
#else
  (void)work;
  (void)items;
  return 1;
#endif
}

// Calls body(begin, end) over [0, n) in contiguous ranges, one per thread,
// where each of the n items costs `cost` element-visits; with cost 1 (an
// elementwise loop) range boundaries fall on multiples of 64 items so that
// no two threads write one cache line of the output.
template <typename F>
static inline void parallel_for_cost(int64_t n, int64_t cost, F body) {
  const int nt = parallel_threads(n * cost, n);
  if (nt <= 1) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
#ifdef _OPENMP
  const int64_t align = cost == 1 ? 64 : 1;
#pragma omp parallel num_threads(nt)
  {
    const int64_t k = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t step = ((n + k - 1) / k + align - 1) / align * align;
    const int64_t begin = t * step < n ? t * step : n;
    const int64_t end = begin + step < n ? begin + step : n;
    if (begin < end) body(begin, end);
  }
#endif
}

// An elementwise loop over n elements.
template <typename F>
static inline void parallel_for(int64_t n, F body) { parallel_for_cost(n, 1, body); }

}  // namespace mxop
#endif  // MX_OPS_PARALLEL_H_
