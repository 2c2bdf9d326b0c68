// scipy's OpenBLAS (pthreads) splits one call across its own thread pool.
// A batch of matrices is split across mx-ops' thread pool instead
// (batch_run.h), each thread calling the BLAS on whole matrices: OpenBLAS's
// threads would only oversubscribe the cores, and with the cores busy its
// spinning threads make a call up to
// 20 times slower (64 Cholesky factorisations of 256 x 256: 360 ms against
// 20 ms with one BLAS thread, measured on 2 cores under load).  OpenBLAS's
// thread count is global (openblas_set_num_threads_local changes it for
// every thread in the pthreads build), so calls that split a batch hold it
// at 1 together: the first one in saves it, the last one out restores it.
// Without OpenBLAS's functions (scipy on another BLAS) nothing changes and
// blas_serial_available() is false.
#ifndef MX_OPS_LINALG_BLAS_THREADS_H_
#define MX_OPS_LINALG_BLAS_THREADS_H_

#include <mutex>

#if defined(__unix__)
#include <dlfcn.h>
#endif

namespace mxop {

typedef void (*BlasSetThreads)(int);
typedef int (*BlasGetThreads)();

struct BlasThreadCount {
  BlasSetThreads set = nullptr;
  BlasGetThreads get = nullptr;
  std::mutex lock;
  int holders = 0;   // calls running with the count held at 1
  int saved = 1;     // the count before the first of them
};

static inline BlasThreadCount &blas_thread_count() {
  static BlasThreadCount c;
  return c;
}

// Finds OpenBLAS's thread count functions in the library that holds
// `blas_function` (scipy's cython_blas) or the ones it links (dlsym on a
// handle searches its dependencies): scipy's bundled OpenBLAS prefixes
// them with scipy_.  Called once at import.
static inline void blas_threads_find(void *blas_function) {
#if defined(__unix__)
  Dl_info info;
  if (dladdr(blas_function, &info) == 0 || info.dli_fname == nullptr) return;
  void *lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return;
  void *set = dlsym(lib, "scipy_openblas_set_num_threads");
  void *get = dlsym(lib, "scipy_openblas_get_num_threads");
  if (set == nullptr || get == nullptr) {
    set = dlsym(lib, "openblas_set_num_threads");
    get = dlsym(lib, "openblas_get_num_threads");
  }
  dlclose(lib);                    // RTLD_NOLOAD took a reference: the library stays
  BlasThreadCount &c = blas_thread_count();
  std::lock_guard<std::mutex> hold(c.lock);
  if (set != nullptr && get != nullptr) {
    c.set = reinterpret_cast<BlasSetThreads>(set);
    c.get = reinterpret_cast<BlasGetThreads>(get);
  }
#else
  (void)blas_function;
#endif
}

static inline bool blas_serial_available() { return blas_thread_count().set != nullptr; }

static inline void blas_serial_enter() {
  BlasThreadCount &c = blas_thread_count();
  if (c.set == nullptr) return;
  std::lock_guard<std::mutex> hold(c.lock);
  if (c.holders++ == 0) {
    c.saved = c.get();
    if (c.saved != 1) c.set(1);
  }
}

static inline void blas_serial_leave() {
  BlasThreadCount &c = blas_thread_count();
  if (c.set == nullptr) return;
  std::lock_guard<std::mutex> hold(c.lock);
  if (--c.holders == 0 && c.saved != 1) c.set(c.saved);
}

}  // namespace mxop
#endif  // MX_OPS_LINALG_BLAS_THREADS_H_
