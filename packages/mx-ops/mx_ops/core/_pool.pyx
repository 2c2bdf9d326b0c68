"""The process-wide thread pool of the CPU kernels (pool.h), its settings
from the environment, and the table every kernel module reaches it through
(``_C_API``, read by src/parallel.h when a module is loaded).

Threads per kernel: ``OMP_NUM_THREADS`` (its first value) if set, else the
CPUs this process may run on, capped by ``MXNET_OMP_MAX_THREADS`` (MXNet's
names).  ``MX_OPS_POOL_SPIN_US``: how long a worker spins for the next job
before it sleeps (default 500 microseconds; 0 sleeps at once)."""
import os
import warnings

from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

import numpy as np

cdef extern from "pool.h" namespace "mxop::pool" nogil:
    void* api()
    void configure(int default_threads, int64_t spin_ns)
    int default_threads()
    int64_t spin_ns()
    int threads_started()
    uint64_t jobs()
    int api_max_threads()
    int api_set_max_threads(int n)
    void probe(int nt, int64_t n, int64_t item_ns, int64_t inner, int32_t* slot,
               uint64_t* thread, uint8_t* nested_serial) except +

cdef extern from "pool_api.h" namespace "mxop" nogil:
    const char* kPoolCapsuleName

# Long enough to cover the gap between kernels called back to back from
# Python (microseconds), short next to OpenMP's default spin (libgomp:
# about 300,000 pauses).  On the loaded 2-vCPU VM, 0, 100, 500 and 2000 us
# timed alike within the noise (benchmarks/compare_pool.py); a quiet
# many-core machine is where the choice should be measured again.
DEFAULT_SPIN_US = 500


def _env_int(name, minimum):
    """The environment's integer `name` (OMP_NUM_THREADS: its first value),
    or None when unset; a value that is not an integer >= minimum is
    ignored with a warning naming it."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    text = raw.split(",")[0].strip() if name == "OMP_NUM_THREADS" else raw.strip()
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        warnings.warn(f"mx_ops: ignoring {name}={raw!r}: an integer >= {minimum} is needed",
                      RuntimeWarning, stacklevel=2)
        return None
    return value


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads_from_environment():
    """The default threads per kernel (see the module's doc)."""
    n = _env_int("OMP_NUM_THREADS", 1) or _cpus()
    cap = _env_int("MXNET_OMP_MAX_THREADS", 1)
    return min(n, cap) if cap is not None else n


def spin_us_from_environment():
    """MX_OPS_POOL_SPIN_US, or DEFAULT_SPIN_US."""
    spin = _env_int("MX_OPS_POOL_SPIN_US", 0)
    return DEFAULT_SPIN_US if spin is None else spin


def configure_pool(threads=None, spin_us=None):
    """Sets the default threads per kernel and the workers' spin
    (microseconds); None keeps the current value."""
    if threads is not None and threads < 1:
        raise ValueError(f"configure_pool: threads must be at least 1, got {threads}")
    if spin_us is not None and spin_us < 0:
        raise ValueError(f"configure_pool: spin_us must be >= 0, got {spin_us}")
    configure(default_threads() if threads is None else threads,
              spin_ns() if spin_us is None else int(spin_us * 1000))


def settings():
    """{'threads': default threads per kernel, 'spin_us': the workers' spin}."""
    return {"threads": default_threads(), "spin_us": spin_ns() / 1000.0}


def max_threads():
    """The most threads a kernel called from this thread may use."""
    return api_max_threads()


def set_max_threads(n):
    """Sets the calling thread's max_threads (the threads kernels invoked
    from it may use; for tests); returns the previous value."""
    if n < 1:
        raise ValueError(f"set_max_threads: n must be at least 1, got {n}")
    return api_set_max_threads(n)


def stats():
    """{'threads_started': workers started so far, 'jobs': jobs split
    across threads so far} (for tests and benchmarks)."""
    return {"threads_started": threads_started(), "jobs": jobs()}


def run_probe(int threads, int64_t items, double item_us=0, int64_t inner=0):
    """Runs a pool job of ``items`` items on up to ``threads`` threads (for
    the tests) and returns, per item, (the slot it ran on, an id of its OS
    thread, whether a nested job of ``inner`` items inside it ran serially
    on that thread: False when inner is 0)."""
    if threads < 1 or items < 0 or inner < 0 or item_us < 0:
        raise ValueError(f"run_probe: threads >= 1 and items, inner, item_us >= 0 are needed, "
                         f"got {threads}, {items}, {inner}, {item_us}")
    slot = np.full(items, -1, np.int32)
    thread = np.zeros(items, np.uint64)
    nested = np.zeros(items, np.uint8)
    cdef int32_t[::1] s = slot
    cdef uint64_t[::1] t = thread
    cdef uint8_t[::1] m = nested
    cdef int64_t ns = <int64_t>(item_us * 1000)
    with nogil:
        probe(threads, items, ns, inner, &s[0] if items else NULL,
              &t[0] if items else NULL, &m[0] if items else NULL)
    return slot, thread, nested.astype(bool)


configure(threads_from_environment(), spin_us_from_environment() * 1000)
_C_API = PyCapsule_New(api(), kPoolCapsuleName, NULL)
