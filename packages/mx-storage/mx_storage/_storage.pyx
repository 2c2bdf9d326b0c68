"""The pooled storage allocator: "efficiently allocates and recycles memory
blocks on host (CPU) and devices (GPUs)".

One pool per device.  A freed block goes to its pool's free list for its
bucket size and the next allocation of that bucket takes it back without a
system call or page faults.  Bucket sizes follow MXNet's pool types:
Naive (the exact size, rounded to the 64-byte alignment), Round (powers of
two up to 2**cutoff, then multiples of 2**cutoff) and Unpooled (no cache).
Every live block is recorded, so a double free or a foreign handle is a
clear error instead of a corrupted free list.

Host blocks at or above MXNET_CPU_MEM_POOL_MMAP_THRESHOLD bytes are mapped
from the OS and unmapped when the pool lets them go, so their pages leave
the process at once; smaller ones come from malloc, and the pool calls
malloc_trim(0) after giving some back, since glibc otherwise keeps the
pages of free chunks inside its heaps for good.
"""
cimport cython
from libc.stdint cimport uint64_t, uint8_t, SIZE_MAX
from libc.stdlib cimport free as c_free
from libc.string cimport memset
from posix.mman cimport (mmap, munmap, MAP_FAILED, MAP_PRIVATE, MAP_ANONYMOUS, PROT_READ,
                         PROT_WRITE)
from posix.unistd cimport sysconf, _SC_PAGESIZE
from libcpp.mutex cimport mutex
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from libcpp.algorithm cimport sort
from cython.operator cimport dereference as deref, preincrement as inc

import threading
import warnings

from mx_engine._context cimport Context, DEV_CPU, DEV_GPU, DEV_CPU_PINNED, MAX_DEVICE_ID
from mx_engine cimport profiler_memory_flag, profiler_record_memory
from mx_engine.base import MXNetError

from mx_storage import _config

cdef extern from "<stdlib.h>" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

cdef extern from *:
    """
    #include <stdlib.h>
    #include <sys/mman.h>
    #if defined(__GLIBC__)
    #include <malloc.h>
    static void mx_malloc_trim(void) { malloc_trim(0); }
    #else
    static void mx_malloc_trim(void) {}   /* other libcs: nothing to ask */
    #endif
    #if defined(MADV_HUGEPAGE)
    static void mx_advise_huge(void* p, size_t n) { madvise(p, n, MADV_HUGEPAGE); }
    #else
    static void mx_advise_huge(void* p, size_t n) {}
    #endif
    """
    void mx_malloc_trim() nogil
    void mx_advise_huge(void* p, size_t n) nogil

cdef enum PoolType:
    POOL_NAIVE = 0
    POOL_ROUND = 1
    POOL_UNPOOLED = 2

_POOL_NAMES = {POOL_NAIVE: "Naive", POOL_ROUND: "Round", POOL_UNPOOLED: "Unpooled"}
_POOL_TYPES = {v: k for k, v in _POOL_NAMES.items()}
_DEV_NAMES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}

# Host blocks are aligned for the widest vector loads (AVX-512) and cache lines.
DEF ALIGN = 64
# Nothing real is this large; a bigger request is a bug, not an OOM.
cdef size_t MAX_ALLOC = (<size_t>1) << 50
# MXNET_STORAGE_DEBUG: freed blocks are filled with this byte and checked
# when reused, to catch writes through dangling pointers.
DEF DEBUG_BYTE = 0xDB


cdef cppclass DevicePool:
    mutex lock
    int dev_type
    int dev_id
    int pool_type
    int cutoff_log2
    size_t mmap_threshold   # host blocks this large are mapped (SIZE_MAX: none)
    bint huge_pages         # and advised to use transparent huge pages
    unordered_map[size_t, vector[void*]] free_blocks   # bucket -> cached blocks
    unordered_map[void*, size_t] live                  # block -> its bucket
    size_t used          # bytes of live blocks (their buckets)
    size_t requested     # bytes asked for by live allocations
    size_t cached        # bytes in free lists
    size_t peak          # high-water mark of `used`
    size_t peak_requested  # high-water mark of `requested`
    uint64_t n_alloc
    uint64_t n_reuse
    uint64_t n_sys_alloc


cdef DevicePool* g_pools[6][<int>MAX_DEVICE_ID]
cdef size_t PAGE = <size_t>sysconf(_SC_PAGESIZE)
# Set while the profiler records memory (profile_memory): then every change of
# a pool's bytes in use is reported as MXNet's "Memory: <device>" counter.
cdef bint* g_profile_memory = profiler_memory_flag()
# Mapped blocks this large are offered transparent huge pages: a first touch
# then faults 2 MiB at a time instead of 4 KiB (a fresh 64 MiB block written
# page by page: 6.5 ms instead of 37 ms, measured).
cdef size_t HUGE = 2 << 20
cdef bint g_debug = False
_create_lock = threading.Lock()
_pinned_warned = False


cdef inline size_t _round_up(size_t n, size_t to) noexcept nogil:
    return (n + to - 1) // to * to


cdef size_t _bucket(DevicePool* p, size_t size) noexcept nogil:
    """The block size that serves `size` bytes: the pool type's bucket,
    rounded up to whole pages when it will be a mapping (what it really
    holds, and sizes within a page then share a bucket)."""
    cdef size_t b = _pool_bucket(p, size)
    if b >= p.mmap_threshold:
        return _round_up(b, PAGE)
    return b


cdef size_t _pool_bucket(DevicePool* p, size_t size) noexcept nogil:
    cdef size_t b, linear
    if p.pool_type != POOL_ROUND:
        return _round_up(size, ALIGN)
    linear = (<size_t>1) << p.cutoff_log2
    if size > linear:
        return _round_up(size, linear)
    b = ALIGN
    while b < size:
        b <<= 1
    return b


cdef void _debug_fill(void* ptr, size_t n) noexcept nogil:
    memset(ptr, DEBUG_BYTE, n)


cdef size_t _debug_first_change(void* ptr, size_t n) noexcept nogil:
    """Offset of the first byte that is no longer the debug pattern, or n."""
    cdef uint8_t* b = <uint8_t*>ptr
    cdef size_t i
    for i in range(n):
        if b[i] != DEBUG_BYTE:
            return i
    return n


cdef bint _is_host(int dev_type) noexcept nogil:
    return dev_type != DEV_GPU and dev_type != DEV_CPU_PINNED


cdef void* _host_alloc(DevicePool* p, size_t bucket) noexcept nogil:
    """A 64-byte aligned host block: its own mapping from the OS (page
    aligned, pages faulted in on first touch) when large, else malloc's."""
    cdef void* ptr = NULL
    if bucket >= p.mmap_threshold:
        ptr = mmap(NULL, _round_up(bucket, PAGE), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if ptr == MAP_FAILED:
            return NULL
        if p.huge_pages and bucket >= HUGE:
            mx_advise_huge(ptr, _round_up(bucket, PAGE))
        return ptr
    if posix_memalign(&ptr, ALIGN, bucket) != 0:
        return NULL
    return ptr


cdef bint _host_free(DevicePool* p, void* ptr, size_t bucket) noexcept nogil:
    """Frees a _host_alloc block; True when it went back to malloc (whose
    heaps keep the pages until trimmed)."""
    if bucket >= p.mmap_threshold:
        munmap(ptr, _round_up(bucket, PAGE))
        return False
    c_free(ptr)
    return True


cdef void* _sys_alloc(DevicePool* p, size_t bucket) noexcept nogil:
    if _is_host(p.dev_type):
        return _host_alloc(p, bucket)
    with gil:
        return _cuda_alloc(p, bucket)


cdef bint _sys_free(DevicePool* p, void* ptr, size_t bucket) noexcept nogil:
    """Hands a block back to the system; True when it went to malloc."""
    if _is_host(p.dev_type):
        return _host_free(p, ptr, bucket)
    with gil:
        return _cuda_free(p, ptr, bucket)


cdef void _sys_free_all(DevicePool* p, vector[void*]& blocks, vector[size_t]& buckets,
                        bint trim) noexcept nogil:
    """Frees blocks taken out of the pool.  Then, if any went to malloc or
    `trim` asks for it, has malloc return the free pages it keeps: glibc
    returns them by itself only from the top of a heap, so blocks freed
    below live ones stay in the process (160-200 MiB after a mixed workload
    and empty_cache, measured)."""
    cdef size_t i
    for i in range(blocks.size()):
        if _sys_free(p, blocks[i], buckets[i]):
            trim = True
    if trim:
        mx_malloc_trim()


cdef void* _cuda_alloc(DevicePool* p, size_t bucket) noexcept:
    """GPU and pinned host memory come from the CUDA runtime through CuPy;
    pinned memory falls back to plain host memory without a GPU."""
    global _pinned_warned
    try:
        from cupy.cuda import runtime
        if p.dev_type == DEV_CPU_PINNED:
            return <void*><size_t>runtime.hostAlloc(bucket, 0)
        with _cuda_device(p.dev_id):
            free_b, total_b = runtime.memGetInfo()
            # MXNET_GPU_MEM_POOL_RESERVE: leave this share of the card alone.
            if free_b < bucket + total_b * _config.load().gpu_reserve_percent // 100:
                return NULL
            return <void*><size_t>runtime.malloc(bucket)
    except ImportError:
        if p.dev_type == DEV_CPU_PINNED:
            if not _pinned_warned:
                _pinned_warned = True
                warnings.warn("cpu_pinned memory without CUDA (CuPy is not installed): "
                              "using plain host memory", RuntimeWarning, stacklevel=2)
            return _host_alloc(p, bucket)
        return NULL
    except Exception:      # cudaErrorMemoryAllocation and friends: an OOM
        return NULL


cdef bint _cuda_free(DevicePool* p, void* ptr, size_t bucket) noexcept:
    try:
        from cupy.cuda import runtime
    except ImportError:    # pinned fallback memory came from _host_alloc
        return _host_free(p, ptr, bucket)
    if p.dev_type == DEV_CPU_PINNED:
        runtime.freeHost(<size_t>ptr)
    else:
        with _cuda_device(p.dev_id):
            runtime.free(<size_t>ptr)
    return False


def _cuda_device(int dev_id):
    import cupy
    return cupy.cuda.Device(dev_id)


cdef int _raise_bad_device(int dev_type, int dev_id) except -1 with gil:
    raise ValueError(f"storage.alloc: no device type {dev_type} with id {dev_id} (types "
                     f"1, 2, 3, 5; ids below {MAX_DEVICE_ID})")


cdef DevicePool* _pool(int dev_type, int dev_id) except NULL nogil:
    """The pool of a device, created on first use (takes the GIL then)."""
    cdef DevicePool* p
    if dev_type not in (1, 2, 3, 5) or not 0 <= dev_id < MAX_DEVICE_ID:
        _raise_bad_device(dev_type, dev_id)
    p = g_pools[dev_type][dev_id]
    if p != NULL:
        return p
    with gil:
        return _create_pool(dev_type, dev_id)


cdef DevicePool* _create_pool(int dev_type, int dev_id) except NULL:
    global g_debug
    cdef DevicePool* p
    cfg = _config.load()
    with _create_lock:
        p = g_pools[dev_type][dev_id]
        if p == NULL:
            p = new DevicePool()
            p.dev_type = dev_type
            p.dev_id = dev_id
            kind = cfg.gpu if dev_type == DEV_GPU else cfg.cpu
            p.pool_type = _POOL_TYPES[kind.pool_type]
            p.cutoff_log2 = kind.round_cutoff
            # Pinned memory is the CUDA runtime's (its no-CUDA fallback stays
            # on malloc); device memory is never ours to map.
            p.mmap_threshold = (cfg.cpu_mmap_threshold if _is_host(dev_type)
                                else SIZE_MAX)
            p.huge_pages = cfg.cpu_huge_pages
            g_debug = cfg.debug
            g_pools[dev_type][dev_id] = p
    return p


cdef void _release_cached(DevicePool* p) noexcept nogil:
    """Hands every cached block of `p` back to the system, and on the host
    what malloc keeps of blocks freed earlier (Unpooled, direct_free)."""
    cdef vector[void*] blocks
    cdef vector[size_t] buckets
    cdef unordered_map[size_t, vector[void*]].iterator it
    cdef size_t i
    p.lock.lock()
    it = p.free_blocks.begin()
    while it != p.free_blocks.end():
        for i in range(deref(it).second.size()):
            blocks.push_back(deref(it).second[i])
            buckets.push_back(deref(it).first)
        inc(it)
    p.free_blocks.clear()
    p.cached = 0
    p.lock.unlock()
    _sys_free_all(p, blocks, buckets, _is_host(p.dev_type))


cdef void _trim_cache(DevicePool* p, size_t size, size_t bucket) noexcept nogil:
    """Keeps the bytes a pool holds (live and cached) within twice the peak
    of bytes ever asked for at once.  Per-bucket free lists otherwise grow
    to the sum of every bucket's own high-water mark, several times the
    peak under a mixed workload.  Only a cache miss adds to what is held,
    so this runs on the slow path; it trims to 3/4 of the limit so that
    trims stay rare.  Largest buckets go first."""
    cdef size_t limit, target, b
    cdef vector[size_t] sizes
    cdef vector[void*] doomed
    cdef vector[size_t] doomed_buckets
    cdef unordered_map[size_t, vector[void*]].iterator it
    cdef size_t i
    p.lock.lock()
    limit = 2 * max(p.peak_requested, p.requested + size)
    if p.used + p.cached + bucket <= limit or p.cached == 0:
        p.lock.unlock()
        return
    target = limit - limit // 4
    it = p.free_blocks.begin()
    while it != p.free_blocks.end():
        if not deref(it).second.empty():
            sizes.push_back(deref(it).first)
        inc(it)
    sort(sizes.begin(), sizes.end())
    i = sizes.size()
    while i > 0 and p.cached > 0 and p.used + p.cached + bucket > target:
        i -= 1
        b = sizes[i]
        while not p.free_blocks[b].empty() and p.used + p.cached + bucket > target:
            doomed.push_back(p.free_blocks[b].back())
            doomed_buckets.push_back(b)
            p.free_blocks[b].pop_back()
            p.cached -= b
    p.lock.unlock()
    _sys_free_all(p, doomed, doomed_buckets, False)


cdef str _figures(DevicePool* p):
    return (f"in use {_fmt(p.used)}, cached {_fmt(p.cached)}, peak {_fmt(p.peak)}, "
            f"{p.n_alloc} allocations")


cdef str _where(int dev_type, int dev_id):
    return f"{_DEV_NAMES.get(dev_type, dev_type)}({dev_id})"


cdef int _raise_bad_size(size_t size, int dev_type, int dev_id) except -1 with gil:
    raise ValueError(f"storage.alloc: {size} bytes on {_where(dev_type, dev_id)} is larger "
                     f"than any device (limit 2**50); a negative size converted to unsigned?")


cdef int _raise_oom(DevicePool* p, size_t size, size_t bucket) except -1 with gil:
    raise MemoryError(f"storage.alloc: cannot allocate {_fmt(size)} (a {_fmt(bucket)} block) "
                      f"on {_where(p.dev_type, p.dev_id)} even after releasing the cache; "
                      f"pool {_POOL_NAMES[p.pool_type]}: {_figures(p)}")


cdef int _raise_use_after_free(DevicePool* p, void* ptr, size_t bucket,
                               size_t offset) except -1 with gil:
    raise MXNetError(f"storage: use after free on {_where(p.dev_type, p.dev_id)}: the block at "
                     f"{<size_t>ptr:#x} ({_fmt(bucket)}) was written at offset {offset} after "
                     f"it was freed (MXNET_STORAGE_DEBUG)")


cdef int _raise_bad_free(StorageHandle* h, const char* api) except -1 with gil:
    raise ValueError(f"storage.{api.decode()}: the block at {<size_t>h.ptr:#x} is not live in the "
                     f"{_where(h.dev_type, h.dev_id)} pool: freed twice, or allocated "
                     f"elsewhere (another device or pool)")


cdef int storage_alloc(size_t size, int dev_type, int dev_id,
                       StorageHandle* out) except -1 nogil:
    """Allocates `size` bytes on a device; 64-byte aligned on the host.
    A zero-size request gives a NULL block that free() accepts."""
    cdef DevicePool* p
    cdef void* ptr = NULL
    cdef size_t bucket, changed, used
    cdef unordered_map[size_t, vector[void*]].iterator it
    out.size = size
    out.dev_type = dev_type
    out.dev_id = dev_id
    out.ptr = NULL
    if size == 0:
        return 0
    if size > MAX_ALLOC:
        _raise_bad_size(size, dev_type, dev_id)
    p = _pool(dev_type, dev_id)
    bucket = _bucket(p, size)
    if p.pool_type != POOL_UNPOOLED:
        p.lock.lock()
        it = p.free_blocks.find(bucket)
        if it != p.free_blocks.end() and not deref(it).second.empty():
            ptr = deref(it).second.back()
            deref(it).second.pop_back()
            p.cached -= bucket
            p.n_reuse += 1
        p.lock.unlock()
        if ptr != NULL and g_debug and _is_host(dev_type):
            changed = _debug_first_change(ptr, bucket)
            if changed != bucket:
                _sys_free(p, ptr, bucket)
                _raise_use_after_free(p, ptr, bucket, changed)
    if ptr == NULL:
        _trim_cache(p, size, bucket)
        ptr = _sys_alloc(p, bucket)
        if ptr == NULL:
            _release_cached(p)        # what the cache holds may be what is missing
            ptr = _sys_alloc(p, bucket)
            if ptr == NULL:
                _raise_oom(p, size, bucket)
        p.lock.lock()
        p.n_sys_alloc += 1
        p.lock.unlock()
    p.lock.lock()
    p.live[ptr] = bucket
    p.used += bucket
    p.requested += size
    p.n_alloc += 1
    if p.used > p.peak:
        p.peak = p.used
    if p.requested > p.peak_requested:
        p.peak_requested = p.requested
    used = p.used
    p.lock.unlock()
    if g_profile_memory[0]:
        profiler_record_memory(dev_type, dev_id, used)
    out.ptr = ptr
    return 0


cdef int _take_live(DevicePool* p, StorageHandle* h, size_t* bucket,
                    const char* api) except -1 nogil:
    cdef unordered_map[void*, size_t].iterator it
    cdef size_t used
    p.lock.lock()
    it = p.live.find(h.ptr)
    if it == p.live.end():
        p.lock.unlock()
        _raise_bad_free(h, api)
    bucket[0] = deref(it).second
    p.live.erase(it)
    p.used -= bucket[0]
    p.requested -= h.size
    used = p.used
    p.lock.unlock()
    if g_profile_memory[0]:
        profiler_record_memory(h.dev_type, h.dev_id, used)
    return 0


cdef DevicePool* _pool_of_handle(StorageHandle* h, const char* api) except NULL nogil:
    cdef DevicePool* p = NULL
    if 0 < h.dev_type < 6 and 0 <= h.dev_id < MAX_DEVICE_ID:
        p = g_pools[h.dev_type][h.dev_id]
    if p == NULL:
        _raise_bad_free(h, api)
    return p


cdef int storage_free(StorageHandle* h) except -1 nogil:
    """Returns a block to its pool (Unpooled: to the system)."""
    cdef DevicePool* p
    cdef size_t bucket
    if h.ptr == NULL:
        return 0
    p = _pool_of_handle(h, "free")
    _take_live(p, h, &bucket, "free")
    if p.pool_type == POOL_UNPOOLED:
        _sys_free(p, h.ptr, bucket)
    else:
        if g_debug and _is_host(p.dev_type):
            _debug_fill(h.ptr, bucket)
        p.lock.lock()
        p.free_blocks[bucket].push_back(h.ptr)
        p.cached += bucket
        p.lock.unlock()
    h.ptr = NULL
    return 0


cdef int storage_direct_free(StorageHandle* h) except -1 nogil:
    """Returns a block straight to the system, bypassing the pool."""
    cdef DevicePool* p
    cdef size_t bucket
    if h.ptr == NULL:
        return 0
    p = _pool_of_handle(h, "direct_free")
    _take_live(p, h, &bucket, "direct_free")
    _sys_free(p, h.ptr, bucket)
    h.ptr = NULL
    return 0

# ---------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------
cdef Context _ctx_arg(ctx, str api):
    if not isinstance(ctx, Context):
        raise TypeError(f"storage.{api}: argument 'ctx' must be a Context such as cpu(0), "
                        f"got {type(ctx).__name__}")
    return <Context>ctx


@cython.auto_pickle(False)
cdef class Handle:
    """A block of device memory: ``ptr``, ``size``, ``ctx``.  Freed back to
    its pool by ``free(handle)`` or when the last reference goes away."""

    def __dealloc__(self):
        if self.live:
            self.live = False
            try:
                storage_free(&self.h)
            except Exception:
                pass   # a finalizer cannot raise; the pool is intact either way

    @property
    def ptr(self):
        """The address of the block (0 for a zero-size block)."""
        return <size_t>self.h.ptr

    @property
    def size(self):
        """The number of bytes asked for."""
        return self.h.size

    @property
    def ctx(self):
        """The device the block lives on."""
        c = Context.__new__(Context)
        (<Context>c).device_typeid = self.h.dev_type
        (<Context>c).device_id = self.h.dev_id
        return c

    @property
    def live(self):
        """False once freed."""
        return self.live

    def __repr__(self):
        state = "" if self.live else ", freed"
        return f"<Handle {self.h.size} bytes at {<size_t>self.h.ptr:#x} on {self.ctx}{state}>"


def alloc(size, ctx):
    """Allocates ``size`` bytes on ``ctx`` from its pool.

    Host memory is 64-byte aligned; blocks of MXNET_CPU_MEM_POOL_MMAP_THRESHOLD
    bytes (1 MiB) or more are whole pages of their own mapping.  Raises ValueError for a negative or
    absurd size and MemoryError, naming the device and the pool's figures,
    when the device is out of memory even after its cache was released.
    """
    cdef Handle h = Handle.__new__(Handle)
    cdef Context c = _ctx_arg(ctx, "alloc")
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"storage.alloc: argument 'size' must be an int, got "
                        f"{type(size).__name__}")
    if size < 0:
        raise ValueError(f"storage.alloc: argument 'size' must be >= 0, got {size}")
    if size > MAX_ALLOC:
        raise ValueError(f"storage.alloc: {size} bytes on {c} is larger than any device "
                         f"(limit 2**50)")
    cdef size_t n = size
    with nogil:
        storage_alloc(n, c.device_typeid, c.device_id, &h.h)
    h.live = True
    return h


cdef Handle _handle_arg(handle, str api):
    if not isinstance(handle, Handle):
        raise TypeError(f"storage.{api}: argument 'handle' must be a Handle, got "
                        f"{type(handle).__name__}")
    if not (<Handle>handle).live:
        raise ValueError(f"storage.{api}: {handle!r} was already freed (double free)")
    return <Handle>handle


def free(handle):
    """Returns a block to its pool for reuse."""
    cdef Handle h = _handle_arg(handle, "free")
    with nogil:
        storage_free(&h.h)
    h.live = False


def direct_free(handle):
    """Returns a block to the system instead of the pool."""
    cdef Handle h = _handle_arg(handle, "direct_free")
    with nogil:
        storage_direct_free(&h.h)
    h.live = False


def release_all(ctx):
    """Hands every cached (free) block of ``ctx``'s pool back to the system
    (MXNet's ``Storage::ReleaseAll``); live blocks stay.  On the host, large
    blocks are unmapped and malloc is asked to return the pages it keeps
    (``malloc_trim``), so the process's RSS falls by what was released."""
    cdef Context c = _ctx_arg(ctx, "release_all")
    cdef DevicePool* p = g_pools[c.device_typeid][c.device_id]
    if p != NULL:
        with nogil:
            _release_cached(p)


def empty_cache(ctx=None):
    """release_all() for ``ctx``, or for every device when None."""
    if ctx is not None:
        release_all(ctx)
        return
    for c in _pool_contexts():
        release_all(c)


def _pool_contexts():
    out = []
    for t in (1, 2, 3, 5):
        for d in range(MAX_DEVICE_ID):
            if g_pools[t][d] != NULL:
                out.append(Context(_DEV_NAMES[t], d))
    return out


def memory_stats(ctx):
    """The pool figures of ``ctx`` as a dict: ``in_use`` (bytes of live
    blocks), ``requested`` (bytes asked for by them), ``cached``, ``peak``,
    ``allocations``, ``reused``, ``system_allocations``,
    ``largest_free_block`` and ``pool_type``."""
    cdef Context c = _ctx_arg(ctx, "memory_stats")
    cdef DevicePool* p = g_pools[c.device_typeid][c.device_id]
    cdef size_t largest = 0
    cdef unordered_map[size_t, vector[void*]].iterator it
    if p == NULL:
        cfg = _config.load()
        kind = cfg.gpu if c.device_typeid == DEV_GPU else cfg.cpu
        return {"in_use": 0, "requested": 0, "cached": 0, "peak": 0, "allocations": 0,
                "reused": 0, "system_allocations": 0, "largest_free_block": 0,
                "pool_type": kind.pool_type}
    p.lock.lock()
    it = p.free_blocks.begin()
    while it != p.free_blocks.end():
        if not deref(it).second.empty() and deref(it).first > largest:
            largest = deref(it).first
        inc(it)
    stats = {"in_use": p.used, "requested": p.requested, "cached": p.cached,
             "peak": p.peak, "allocations": p.n_alloc, "reused": p.n_reuse,
             "system_allocations": p.n_sys_alloc, "largest_free_block": largest,
             "pool_type": _POOL_NAMES[p.pool_type]}
    p.lock.unlock()
    return stats


def reset_peak(ctx):
    """Starts ``peak`` again from the bytes in use now."""
    cdef Context c = _ctx_arg(ctx, "reset_peak")
    cdef DevicePool* p = g_pools[c.device_typeid][c.device_id]
    if p != NULL:
        p.lock.lock()
        p.peak = p.used
        p.peak_requested = p.requested
        p.lock.unlock()


def memory_summary():
    """A table of every pool's figures."""
    head = (f"{'device':<14}{'pool':<10}{'in use':>12}{'cached':>12}{'peak':>12}"
            f"{'allocs':>10}{'reused':>10}{'sys allocs':>12}{'largest free':>14}")
    lines = [head, "-" * len(head)]
    for c in _pool_contexts():
        s = memory_stats(c)
        lines.append(f"{str(c):<14}{s['pool_type']:<10}{_fmt(s['in_use']):>12}"
                     f"{_fmt(s['cached']):>12}{_fmt(s['peak']):>12}{s['allocations']:>10}"
                     f"{s['reused']:>10}{s['system_allocations']:>12}"
                     f"{_fmt(s['largest_free_block']):>14}")
    return "\n".join(lines)


def set_pool_type(device_type, pool_type, round_cutoff=None):
    """Switches the pools of a device kind ('cpu' or 'gpu'; 'cpu' covers
    cpu_pinned too) to 'Naive', 'Round' or 'Unpooled', as the
    MXNET_*_MEM_POOL_TYPE variables do at start.  Cached blocks are released
    first; live blocks keep working."""
    cdef DevicePool* p
    if device_type not in ("cpu", "gpu"):
        raise ValueError(f"set_pool_type: 'device_type' must be 'cpu' or 'gpu', got "
                         f"{device_type!r}")
    if pool_type not in _POOL_TYPES:
        raise ValueError(f"set_pool_type: 'pool_type' must be one of "
                         f"{', '.join(_POOL_TYPES)}, got {pool_type!r}")
    if round_cutoff is not None and not 6 <= round_cutoff <= 40:
        raise ValueError(f"set_pool_type: 'round_cutoff' must be in [6, 40], got "
                         f"{round_cutoff}")
    _config.override(device_type, pool_type, round_cutoff)
    for c in _pool_contexts():
        if (c.device_type == "gpu") != (device_type == "gpu"):
            continue
        p = g_pools[c.device_typeid][c.device_id]
        _release_cached(p)
        p.lock.lock()
        p.pool_type = _POOL_TYPES[pool_type]
        if round_cutoff is not None:
            p.cutoff_log2 = round_cutoff
        p.lock.unlock()


def _set_debug(bint on):
    """MXNET_STORAGE_DEBUG at run time (tests)."""
    global g_debug
    g_debug = on


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _free_address(size_t ptr, size_t size, ctx):
    """Frees a raw address as a C caller would (tests: foreign pointers)."""
    cdef Context c = _ctx_arg(ctx, "free")
    cdef StorageHandle h
    h.ptr = <void*>ptr
    h.size = size
    h.dev_type = c.device_typeid
    h.dev_id = c.device_id
    with nogil:
        storage_free(&h)


def _alloc_free_loop(long n, size_t size, ctx):
    """``n`` alloc+free pairs of ``size`` bytes from C (benchmarks): what a
    Cython caller such as NDArray pays, without Python in the loop."""
    cdef Context c = _ctx_arg(ctx, "alloc")
    cdef StorageHandle h
    cdef long i
    with nogil:
        for i in range(n):
            storage_alloc(size, c.device_typeid, c.device_id, &h)
            storage_free(&h)


def _alloc_touch_free_loop(long n, size_t size, ctx):
    """``n`` times: allocate, write every page, free (benchmarks)."""
    cdef Context c = _ctx_arg(ctx, "alloc")
    cdef StorageHandle h
    cdef long i
    cdef size_t off
    with nogil:
        for i in range(n):
            storage_alloc(size, c.device_typeid, c.device_id, &h)
            off = 0
            while off < size:
                (<char*>h.ptr)[off] = 1
                off += 4096
            storage_free(&h)
