// The names the GEMM-based and gather kernels split their work with.
// They were a per-module team of threads; both now run on the process-wide
// pool (parallel.h, core/pool.h), which keeps the team's guarantees: the
// caller never waits for a worker that has not started, one job at a time
// (a second caller works alone), nested calls and a forked child run on
// the calling thread.
#ifndef MX_OPS_TEAM_H_
#define MX_OPS_TEAM_H_

#include <cstdint>

#include "parallel.h"

namespace mxop {

class Team {
 public:
  // Runs body(t, i) for i in [0, n) on up to nt threads; t < nt names the
  // thread (0: the caller) and so the workspace slab it may use.
  template <typename B>
  void run(int nt, int64_t n, B &body) { pool_run(nt, n, body); }

  static Team &get() {
    static Team team;
    return team;
  }
};

// parallel_for_cost under its former name.
template <typename B>
static inline void team_for_cost(int64_t n, int64_t cost, B body) {
  parallel_for_cost(n, cost, body);
}

}  // namespace mxop
#endif  // MX_OPS_TEAM_H_
