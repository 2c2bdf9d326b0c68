// A team of worker threads for the GEMM-based kernels (convolution,
// FullyConnected) whose caller never waits for a worker that has not
// started.
//
// Why not an OpenMP parallel region: its end is a barrier that every team
// member must reach.  On a machine shared with other jobs the OS often runs
// a woken worker only milliseconds later; the calling thread had long taken
// all the items (they are handed out one at a time), yet it sat at the
// barrier until the late worker arrived and found nothing to do.  Measured
// on the 2-vCPU development VM under load: LeNet's 1 ms forward took 7-8 ms
// in about half of the runs.  Here the caller waits only for items that a
// running worker has claimed; a worker that wakes after the job is over
// sees it closed and goes back to sleep.
//
// One job at a time: a second caller (another engine worker) while a job
// runs does its work alone instead of queueing.  After fork() (no workers
// in the child), inside a worker, or inside an OpenMP region, work runs on
// the calling thread.
#ifndef MX_OPS_TEAM_H_
#define MX_OPS_TEAM_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel.h"

namespace mxop {

class Team {
 public:
  // Runs body(t, i) for i in [0, n) on up to nt threads; t < nt names the
  // thread (0: the caller) and so the workspace slab it may use.
  template <typename B>
  void run(int nt, int64_t n, B &body) {
    if (nt <= 1 || n <= 1 || in_worker() || forked_child() || in_openmp() ||
        !busy_.try_lock()) {
      for (int64_t i = 0; i < n; ++i) body(0, i);
      return;
    }
    grow(nt - 1);
    // An odd generation while the job is written: a worker joins only an
    // even one, and leaves if the generation moved after it checked in.
    gen_.fetch_add(1, std::memory_order_seq_cst);
    fn_ = [](void *ctx, int t, int64_t i) { (*static_cast<B *>(ctx))(t, i); };
    ctx_ = &body;
    n_ = n;
    nt_ = nt;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    closed_.store(false, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lk(m_);
      gen_.fetch_add(1, std::memory_order_seq_cst);
    }
    cv_.notify_all();
    work(0);
    // Every item was claimed; wait for the ones still running, then for
    // workers that joined and are leaving.  A worker that checks in after
    // `closed_` is set leaves without touching the job.
    while (done_.load(std::memory_order_acquire) < n) std::this_thread::yield();
    closed_.store(true, std::memory_order_seq_cst);
    while (active_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
    busy_.unlock();
  }

  static Team &get() {
    static Team *team = new Team();     // never destroyed: workers outlive exit
    return *team;
  }

 private:
  static bool &in_worker() {
    static thread_local bool flag = false;
    return flag;
  }
  static bool in_openmp() {
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return false;
#endif
  }

  void work(int t) {
    for (int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n_;
         i = next_.fetch_add(1, std::memory_order_relaxed)) {
      fn_(ctx_, t, i);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  // Starts workers until there are at least k (caller holds busy_).
  void grow(int k) {
    while (int(workers_.size()) < k) {
      const int t = int(workers_.size()) + 1;
      workers_.emplace_back([this, t] { loop(t); });
      workers_.back().detach();
    }
  }

  void loop(int t) {
    in_worker() = true;
    uint64_t seen = gen_.load(std::memory_order_acquire);
    auto fresh = [&](uint64_t g) { return g != seen && (g & 1) == 0; };
    for (;;) {
      uint64_t g = gen_.load(std::memory_order_acquire);
      for (int spin = 0; !fresh(g) && spin < 2000; ++spin) {    // ~10-20 us
        std::this_thread::yield();
        g = gen_.load(std::memory_order_acquire);
      }
      if (!fresh(g)) {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return fresh(gen_.load(std::memory_order_acquire)); });
        continue;
      }
      seen = g;
      // Checked in: the caller waits for active_ to drop before it closes
      // this job's fields; a job closed or replaced meanwhile is left alone.
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (!closed_.load(std::memory_order_seq_cst) &&
          gen_.load(std::memory_order_seq_cst) == g && t < nt_)
        work(t);
      active_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  std::mutex busy_, m_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> active_{0};
  std::atomic<bool> closed_{true};
  std::atomic<int64_t> next_{0}, done_{0};
  void (*fn_)(void *, int, int64_t) = nullptr;
  void *ctx_ = nullptr;
  int64_t n_ = 0;
  int nt_ = 0;
};

// parallel_for_cost on the team of this extension module rather than an
// OpenMP team of the calling thread: one pool of threads however many engine
// workers call, none left spinning for another caller's team, and no
// barrier waiting for a late worker.  body(b, e) over about four contiguous
// ranges per thread.
template <typename B>
static inline void team_for_cost(int64_t n, int64_t cost, B body) {
  const int nt = parallel_threads(n * cost, n);
  const int64_t parts = nt <= 1 ? 1 : (n < 4 * int64_t(nt) ? n : 4 * int64_t(nt));
  const int64_t step = parts > 0 ? (n + parts - 1) / parts : 0;
  auto item = [&](int, int64_t i) {
    const int64_t b = i * step, e = b + step < n ? b + step : n;
    if (b < e) body(b, e);
  };
  Team::get().run(nt, parts, item);
}

}  // namespace mxop
#endif  // MX_OPS_TEAM_H_
