"""What a package above mx-storage does with its C API: blocks allocated,
written and freed from C with no GIL, and filled with Philox draws.  Built
and driven by ../test_cython_api.py."""
from libc.stdint cimport uint8_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc

from mx_engine cimport Context
from mx_storage cimport Handle, StorageHandle, storage_alloc, storage_direct_free, storage_free
# The kernels' own .pxd: mx_storage/__init__.pxd does not re-export them.
from mx_storage._philox cimport fill_uniform_f32


cdef inline uint8_t _pattern(size_t j, int block, int rnd) noexcept nogil:
    return <uint8_t>(j * 131 + <size_t>block * 29 + <size_t>rnd * 7 + 1)


def churn(Context ctx not None, int rounds, int nblocks, size_t size, bint direct=False):
    """``rounds`` times, with no GIL: allocates ``nblocks`` blocks of
    ``size`` bytes, writes a pattern of (block, round, position) into every
    byte of each, checks them all once all are written (live blocks must not
    overlap) and frees them, every other one with storage_direct_free when
    ``direct``.  Returns what it counted."""
    cdef int dev_type = ctx.device_typeid, dev_id = ctx.device_id
    cdef long long allocations = 0, bad_fields = 0, misaligned = 0, bad_bytes = 0
    cdef int r, i
    cdef size_t j
    cdef uint8_t* p
    cdef StorageHandle* hs = <StorageHandle*>malloc(nblocks * sizeof(StorageHandle))
    if hs == NULL:
        raise MemoryError()
    for i in range(nblocks):
        hs[i].ptr = NULL
    try:
        with nogil:
            for r in range(rounds):
                for i in range(nblocks):
                    storage_alloc(size, dev_type, dev_id, &hs[i])
                    allocations += 1
                    p = <uint8_t*>hs[i].ptr
                    if (p == NULL or hs[i].size != size or hs[i].dev_type != dev_type
                            or hs[i].dev_id != dev_id):
                        bad_fields += 1
                        continue
                    if <uintptr_t>p % 64 != 0:
                        misaligned += 1
                    for j in range(size):
                        p[j] = _pattern(j, i, r)
                for i in range(nblocks):
                    p = <uint8_t*>hs[i].ptr
                    if p != NULL:
                        for j in range(size):
                            if p[j] != _pattern(j, i, r):
                                bad_bytes += 1
                    if direct and i % 2:
                        storage_direct_free(&hs[i])
                    else:
                        storage_free(&hs[i])
                    if hs[i].ptr != NULL:       # a free clears the handle
                        bad_fields += 1
    finally:
        for i in range(nblocks):               # after an error: what is still held
            storage_free(&hs[i])
        free(hs)
    return {"allocations": allocations, "bad_fields": bad_fields, "misaligned": misaligned,
            "bad_bytes": bad_bytes}


def free_twice(Context ctx not None, size_t size, str second):
    """Allocates a block, frees it, and frees it again, all from C with no
    GIL.  ``second``: "same" frees the same StorageHandle, which the first
    free cleared (so nothing happens); "free" and "direct_free" free a copy
    taken before the first free, which the pool must refuse (ValueError).
    Returns the address the handle holds at the end."""
    cdef int how = ("same", "free", "direct_free").index(second)
    cdef int dev_type = ctx.device_typeid, dev_id = ctx.device_id
    cdef StorageHandle h, stale
    with nogil:
        storage_alloc(size, dev_type, dev_id, &h)
        stale = h
        storage_free(&h)
        if how == 0:
            storage_free(&h)
        elif how == 1:
            storage_free(&stale)
        else:
            storage_direct_free(&stale)
    return <uintptr_t>h.ptr


def uniform(Context ctx not None, uint64_t seed, uint64_t offset, size_t n, size_t split,
            float low=0.0, float high=1.0):
    """``n`` float32 draws of the Uniform[low, high) stream of (seed,
    offset), written with no GIL by fill_uniform_f32 into a block from
    storage_alloc in two calls, elements [0, split) and [split, n), as two
    threads would share them.  Returned as bytes."""
    cdef int dev_type = ctx.device_typeid, dev_id = ctx.device_id
    cdef StorageHandle h
    cdef float* out
    if n == 0 or split > n:
        raise ValueError(f"uniform: need 0 < n and split <= n, got n={n}, split={split}")
    with nogil:
        storage_alloc(n * sizeof(float), dev_type, dev_id, &h)
        out = <float*>h.ptr
        fill_uniform_f32(seed, offset, 0, out, split, low, high)
        fill_uniform_f32(seed, offset, split, out + split, n - split, low, high)
    try:
        return (<char*>h.ptr)[:n * sizeof(float)]
    finally:
        storage_free(&h)


def handle_fields(Handle handle not None):
    """What C sees in a Handle made by mx_storage.alloc: its StorageHandle
    and whether it is live."""
    return {"ptr": <uintptr_t>handle.h.ptr, "size": handle.h.size,
            "dev_type": handle.h.dev_type, "dev_id": handle.h.dev_id, "live": handle.live}


def handle_layout():
    """Byte offsets of StorageHandle's fields, and its size, as compiled."""
    cdef StorageHandle h
    cdef char* base = <char*>&h
    return {"ptr": <char*>&h.ptr - base, "size": <char*>&h.size - base,
            "dev_type": <char*>&h.dev_type - base, "dev_id": <char*>&h.dev_id - base,
            "sizeof": sizeof(StorageHandle)}
