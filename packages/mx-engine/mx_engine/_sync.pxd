# Locks, condition variables, clocks and the per-thread worker id the engine
# core uses without the GIL.  std::condition_variable needs a unique_lock; the
# helpers below adopt a plain std::mutex so Cython code can lock/unlock it
# directly and still wait on a condition.
from libcpp.mutex cimport mutex
from libcpp.condition_variable cimport condition_variable

cdef extern from * nogil:
    """
    #include <mutex>
    #include <condition_variable>
    #include <chrono>
    #include <new>
    #include <time.h>
    #include <stdint.h>
    #include <pthread.h>

    static inline void mx_cv_wait(std::condition_variable &cv, std::mutex &m) {
        std::unique_lock<std::mutex> lk(m, std::adopt_lock);
        cv.wait(lk);
        lk.release();
    }
    /* Returns 0 when woken, 1 on time-out. */
    static inline int mx_cv_wait_ns(std::condition_variable &cv, std::mutex &m,
                                    int64_t ns) {
        std::unique_lock<std::mutex> lk(m, std::adopt_lock);
        std::cv_status s = cv.wait_for(lk, std::chrono::nanoseconds(ns));
        lk.release();
        return s == std::cv_status::timeout;
    }
    /* After fork() only the forking thread exists; a mutex or condition that
       another thread held or waited on is left in an undefined state, so the
       child constructs fresh ones in place. */
    /* The engine lock guards critical sections of a few hundred ns that a
       pusher and the workers take constantly: glibc's adaptive mutex spins
       briefly before sleeping in the kernel, which a plain mutex does not. */
    static inline void mx_reinit_mutex(std::mutex &m) {
        new (&m) std::mutex();
    #if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
        pthread_mutex_init(m.native_handle(), &attr);
        pthread_mutexattr_destroy(&attr);
    #endif
    }
    static inline int mx_load_relaxed(int *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void mx_reinit_cv(std::condition_variable &cv) {
        new (&cv) std::condition_variable();
    }
    static inline int64_t mx_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    }
    /* 0 for threads that are not engine workers, else the worker's trace id. */
    static thread_local int mx_thread_worker_id = 0;
    static inline int mx_get_worker_id(void) { return mx_thread_worker_id; }
    static inline void mx_set_worker_id(int id) { mx_thread_worker_id = id; }
    /* The calling thread's bulk batch (a BulkState*), or NULL. */
    static thread_local void *mx_thread_bulk = NULL;
    static inline void *mx_get_bulk(void) { return mx_thread_bulk; }
    static inline void mx_set_bulk(void *b) { mx_thread_bulk = b; }
    /* The calling thread's profiler scope (an interned name), or NULL. */
    static thread_local const char *mx_thread_scope = NULL;
    static inline const char *mx_get_scope(void) { return mx_thread_scope; }
    static inline void mx_set_scope(const char *s) { mx_thread_scope = s; }
    /* Whether the calling thread pushes for an executor (the profiler's
       profile_symbolic) rather than for imperative calls. */
    static thread_local int mx_thread_symbolic = 0;
    static inline int mx_get_symbolic(void) { return mx_thread_symbolic; }
    static inline void mx_set_symbolic(int s) { mx_thread_symbolic = s; }
    static inline void mx_cpu_relax(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    """
    void mx_cv_wait(condition_variable& cv, mutex& m)
    int mx_cv_wait_ns(condition_variable& cv, mutex& m, long long ns)
    void mx_reinit_mutex(mutex& m)
    void mx_reinit_cv(condition_variable& cv)
    int mx_load_relaxed(int* p)
    long long mx_now_ns()
    int mx_get_worker_id()
    void mx_set_worker_id(int id)
    void* mx_get_bulk()
    void mx_set_bulk(void* b)
    const char* mx_get_scope()
    void mx_set_scope(const char* s)
    int mx_get_symbolic()
    void mx_set_symbolic(int s)
    void mx_cpu_relax()
