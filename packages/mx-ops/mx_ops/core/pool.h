// The process-wide thread pool behind every CPU kernel that splits its work
// (src/parallel.h's parallel_for_cost, team.h's callers).  Only
// mx_ops.core._pool compiles this file; the other extension modules reach
// the one instance through the PoolApi table it exports (src/pool_api.h).
//
// A job is n items, claimed one at a time: thread t first from its own
// segment (the t-th of nt equal parts, so each thread finds its part of
// the data in its cache call after call), then from the others'.  The
// caller claims items itself from the start and waits only for items a
// running worker has claimed:
// an OpenMP region ends in a barrier that waits for every team member, and
// on a shared VM the OS often runs a woken worker milliseconds late (relu of
// 1M floats took 6 ms instead of 0.4 ms after an idle pause).  A worker that
// arrives after the job is over finds it closed and leaves it alone.
//
// After a job a worker spins for `spin_ns` (OpenMP's blocktime; the
// environment's MX_OPS_POOL_SPIN_US) before it sleeps: kernels called back
// to back from Python find every worker awake instead of paying a futex
// wake-up each, and the caller no longer does most of the work alone.
//
// One job at a time: a second caller (another engine worker) while a job
// runs does its work alone instead of queueing behind it.  Inside a job
// (a worker, or a caller running its items) and in a forked child (the
// workers do not survive fork) work runs on the calling thread.
#ifndef MX_OPS_CORE_POOL_H_
#define MX_OPS_CORE_POOL_H_

#include <pthread.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "pool_api.h"

namespace mxop {
namespace pool {

// More threads than this are never started, whatever max_threads says (a
// test may ask for more threads than the machine has; a huge value must
// not start thousands).
constexpr int kMaxPoolThreads = 256;

// How long the caller pause-spins for a running worker's last item before
// it starts yielding the core.
constexpr int64_t kWaitSpinNs = 100000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Pool {
 public:
  static Pool &get() {
    static Pool *pool = new Pool();   // never destroyed: workers outlive exit
    return *pool;
  }

  void configure(int default_threads, int64_t spin_ns) {
    default_threads_.store(default_threads < 1 ? 1 : default_threads);
    spin_ns_.store(spin_ns < 0 ? 0 : spin_ns);
  }
  int default_threads() const { return default_threads_.load(); }
  int64_t spin_ns() const { return spin_ns_.load(); }

  int max_threads() const { return limit() > 0 ? limit() : default_threads_.load(); }
  int set_max_threads(int n) {
    const int old = max_threads();
    if (n >= 1) limit() = n;
    return old;
  }

  int threads_for(int64_t work, int64_t items) const {
    if (work < kParallelMinElements || items < 2 || forked() || in_job()) return 1;
    int64_t nt = max_threads();
    const int64_t useful = work / (kParallelMinElements / 2);
    if (useful < nt) nt = useful;
    if (items < nt) nt = items;
    return int(nt < kMaxPoolThreads ? nt : kMaxPoolThreads);
  }

  void run(int nt, int64_t n, void (*fn)(void *, int, int64_t), void *ctx) {
    if (nt > kMaxPoolThreads) nt = kMaxPoolThreads;
    if (nt <= 1 || n <= 1 || in_job() || forked() || !busy_.try_lock()) {
      for (int64_t i = 0; i < n; ++i) fn(ctx, 0, i);
      return;
    }
    jobs_.fetch_add(1, std::memory_order_relaxed);
    grow(nt - 1);
    // An odd generation while the job is written: a worker joins only an
    // even one, and leaves if the generation moved after it checked in.
    gen_.fetch_add(1, std::memory_order_seq_cst);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    nt_ = nt;
    for (int s = 0; s < nt; ++s) {
      segments_[s].next.store(n * s / nt, std::memory_order_relaxed);
      segments_[s].end = n * (s + 1) / nt;
    }
    done_.store(0, std::memory_order_relaxed);
    closed_.store(false, std::memory_order_relaxed);
    bool wake;
    {
      std::lock_guard<std::mutex> lk(m_);
      gen_.fetch_add(1, std::memory_order_seq_cst);
      wake = sleepers_ > 0;          // spinning workers see gen_ without a futex call
      if (wake) keep_off_this_cpu(nt);
    }
    if (wake) cv_.notify_all();
    std::exception_ptr error;
    in_job() = true;
    try {
      work(0);
    } catch (...) {
      // The items nobody claimed yet are dropped, so that the job can close.
      error = std::current_exception();
      for (int s = 0; s < nt; ++s) {
        Segment &seg = segments_[s];
        const int64_t first = seg.next.exchange(seg.end, std::memory_order_relaxed);
        if (first < seg.end) done_.fetch_add(seg.end - first, std::memory_order_release);
      }
      done_.fetch_add(1, std::memory_order_release);   // the item that threw
    }
    in_job() = false;
    // Every item was claimed; wait for the ones still running, then for
    // workers that checked in and are leaving.  A worker that checks in
    // after `closed_` is set leaves without touching the job.
    wait_until([&] { return done_.load(std::memory_order_acquire) >= n; });
    closed_.store(true, std::memory_order_seq_cst);
    wait_until([&] { return active_.load(std::memory_order_seq_cst) == 0; });
    busy_.unlock();
    if (error) std::rethrow_exception(error);
  }

  int threads_started() {
    std::lock_guard<std::mutex> lk(grow_m_);
    return int(workers_);
  }
  uint64_t jobs() const { return jobs_.load(std::memory_order_relaxed); }

  static bool &forked() { static bool flag = false; return flag; }

 private:
  Pool() {}

  // Per calling thread: the set_max_threads value (0: the default) and
  // whether it is inside a job.
  static int &limit() { static thread_local int n = 0; return n; }
  static bool &in_job() { static thread_local bool flag = false; return flag; }

  // Thread t claims the items of its own segment first, then those left in
  // the others'.  The segments are the static split: when every thread
  // runs, each touches the same part of the data call after call and finds
  // it in its own cache (relu of 1M floats: 0.10 ms with items claimed from
  // one shared counter, as fast as one thread, against 0.077 ms for
  // OpenMP's static halves); a late thread's segment is taken by the others.
  void work(int t) {
    for (int k = 0; k < nt_; ++k) {
      Segment &seg = segments_[(t + k) % nt_];
      for (int64_t i = seg.next.fetch_add(1, std::memory_order_relaxed); i < seg.end;
           i = seg.next.fetch_add(1, std::memory_order_relaxed)) {
        fn_(ctx_, t, i);
        done_.fetch_add(1, std::memory_order_release);
      }
    }
  }

  // Starts workers until there are at least k (the caller holds busy_).
  // When the system refuses a thread the job runs on those there are.
  void grow(int k) {
    std::lock_guard<std::mutex> lk(grow_m_);
    while (workers_ < k) {
      const int t = workers_ + 1;
      try {
        std::thread th([this, t] { loop(t); });
        handles_[t] = th.native_handle();     // valid while it runs: workers never exit
        th.detach();
      } catch (const std::system_error &) {
        return;
      }
      workers_ = t;
    }
  }

  // Before waking sleeping workers (the caller holds m_): keeps the
  // sleeping ones of workers 1..nt-1 off the caller's CPU until they run
  // (loop() restores their CPUs).  On the idle 2-vCPU VM a worker woken
  // after 0.12 s idle ran no item in 67 of the next 90 calls, by all signs
  // queued on the waker's CPU behind the running caller while the other
  // vCPU idled (softmax_cross_entropy (1024, 1000): six calls at one
  // thread's 0.33 ms instead of 0.17; a GOMP team's calls 2-6 ran on both
  // CPUs); kept off the caller's CPU it ran in all 90.
  void keep_off_this_cpu(int nt) {
#if defined(__linux__)
    cpu_set_t set;
    const int cpu = sched_getcpu();
    if (cpu < 0 || sched_getaffinity(0, sizeof(set), &set) != 0) return;
    CPU_CLR(cpu, &set);
    if (CPU_COUNT(&set) == 0) return;
    // handles_ is written by grow(), on this thread (the holder of busy_).
    for (int t = 1; t < nt && t <= workers_; ++t)
      if (asleep_[t]) pthread_setaffinity_np(handles_[t], sizeof(set), &set);
#else
    (void)nt;
#endif
  }

  // The caller's wait for a worker finishing its last item (microseconds):
  // pause-spin first, since a yield may hand the core to another process
  // for a whole time slice; yield once the worker looks preempted.
  template <typename P>
  static void wait_until(P done) {
    int64_t yield_after = 0;
    for (unsigned i = 1; !done(); ++i) {
      if (yield_after == 0) yield_after = now_ns() + kWaitSpinNs;
      if ((i & 63) == 0 && now_ns() > yield_after)
        std::this_thread::yield();
      else
        cpu_relax();
    }
  }

  bool fresh(uint64_t g, uint64_t seen) const { return g != seen && (g & 1) == 0; }

  // Spins until a new job is published or spin_ns has passed.  It pauses
  // but never yields: on the loaded 2-vCPU VM a yield handed the core to
  // another process for a time slice, and a spinning worker ran 12% of
  // back-to-back jobs' items instead of half.
  uint64_t spin_for_job(uint64_t seen) {
    uint64_t g = gen_.load(std::memory_order_acquire);
    const int64_t spin = spin_ns_.load(std::memory_order_relaxed);
    if (fresh(g, seen) || spin == 0) return g;
    const int64_t deadline = now_ns() + spin;
    for (unsigned i = 1; !fresh(g, seen); ++i) {
      cpu_relax();
      if ((i & 63) == 0 && now_ns() > deadline) break;
      g = gen_.load(std::memory_order_acquire);
    }
    return g;
  }

  void loop(int t) {
    in_job() = true;        // a kernel's nested split runs on this thread
    uint64_t seen = gen_.load(std::memory_order_acquire);
#if defined(__linux__)
    cpu_set_t cpus;         // this thread's CPUs, restored after each wake-up
    const bool have_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
#endif
    for (;;) {
      uint64_t g = spin_for_job(seen);
      if (!fresh(g, seen)) {
        std::unique_lock<std::mutex> lk(m_);
        ++sleepers_;
        asleep_[t] = true;
        cv_.wait(lk, [&] { return fresh(gen_.load(std::memory_order_acquire), seen); });
        asleep_[t] = false;
        --sleepers_;
        lk.unlock();
#if defined(__linux__)
        if (have_cpus) pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
#endif
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

  std::mutex busy_, m_, grow_m_;
  std::condition_variable cv_;
  int workers_ = 0, sleepers_ = 0;
  pthread_t handles_[kMaxPoolThreads + 1] = {};   // worker t's thread
  bool asleep_[kMaxPoolThreads + 1] = {};         // worker t waits on cv_ (m_)
  std::atomic<int> default_threads_{1};
  std::atomic<int64_t> spin_ns_{0};
  std::atomic<uint64_t> gen_{0}, jobs_{0};
  std::atomic<int> active_{0};
  std::atomic<bool> closed_{true};
  // Thread s's share of the items: [next, end) still unclaimed.
  struct alignas(64) Segment {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  Segment segments_[kMaxPoolThreads];
  std::atomic<int64_t> done_{0};
  void (*fn_)(void *, int, int64_t) = nullptr;
  void *ctx_ = nullptr;
  int64_t n_ = 0;
  int nt_ = 0;
};

inline void mark_forked_child() { Pool::forked() = true; }

inline int api_max_threads() { return Pool::get().max_threads(); }
inline int api_set_max_threads(int n) { return Pool::get().set_max_threads(n); }
inline int api_threads_for(int64_t work, int64_t items) {
  return Pool::get().threads_for(work, items);
}
inline void api_run(int nt, int64_t n, void (*fn)(void *, int, int64_t), void *ctx) {
  Pool::get().run(nt, n, fn, ctx);
}

// The table handed to the other modules; registers the fork handler once.
inline PoolApi *api() {
  static PoolApi table = [] {
    pthread_atfork(nullptr, nullptr, mark_forked_child);
    return PoolApi{kPoolAbi, api_max_threads, api_set_max_threads, api_threads_for, api_run};
  }();
  return &table;
}

// A job of n items on up to nt threads for the tests: item i records the
// slot t it ran on and its thread; each item busy-waits `item_ns` (so that
// workers get a share), then, with inner > 0, runs a nested job of `inner`
// items and records 1 in nested_serial[i] if that job ran serially on this
// thread with slot 0 and threads_for said 1 inside it.
inline void probe(int nt, int64_t n, int64_t item_ns, int64_t inner, int32_t *slot,
                  uint64_t *thread, uint8_t *nested_serial) {
  auto self = [] { return uint64_t(std::hash<std::thread::id>()(std::this_thread::get_id())); };
  auto body = [&](int t, int64_t i) {
    slot[i] = t;
    thread[i] = self();
    const int64_t until = now_ns() + item_ns;
    while (now_ns() < until) cpu_relax();
    if (inner <= 0) return;
    bool serial = Pool::get().threads_for(int64_t(1) << 40, int64_t(1) << 20) == 1;
    int64_t ran = 0;
    auto nested = [&](int u, int64_t) { serial = serial && u == 0 && self() == thread[i]; ++ran; };
    Pool::get().run(nt, inner, [](void *c, int u, int64_t k) { (*static_cast<decltype(nested) *>(c))(u, k); },
                    &nested);
    nested_serial[i] = serial && ran == inner;
  };
  Pool::get().run(nt, n, [](void *c, int t, int64_t i) { (*static_cast<decltype(body) *>(c))(t, i); },
                  &body);
}

inline void configure(int default_threads, int64_t spin_ns) {
  Pool::get().configure(default_threads, spin_ns);
}
inline int default_threads() { return Pool::get().default_threads(); }
inline int64_t spin_ns() { return Pool::get().spin_ns(); }
inline int threads_started() { return Pool::get().threads_started(); }
inline uint64_t jobs() { return Pool::get().jobs(); }

}  // namespace pool
}  // namespace mxop
#endif  // MX_OPS_CORE_POOL_H_
