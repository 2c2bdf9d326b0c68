# C-level API of the pooled allocator; mx-ndarray cimports it through
# mx_storage/__init__.pxd.
from libc.stdint cimport uint64_t

# A block of device memory.  `size` is what was asked for; the pool may hold
# a larger block (its bucket) behind it.
cdef struct StorageHandle:
    void* ptr
    size_t size
    int dev_type
    int dev_id

# storage_free/storage_direct_free set h.ptr to NULL, so freeing the same
# struct twice is a no-op; freeing a stale copy of a freed handle, or a block
# of another pool, raises ValueError.
cdef int storage_alloc(size_t size, int dev_type, int dev_id,
                       StorageHandle* out) except -1 nogil
cdef int storage_free(StorageHandle* h) except -1 nogil
cdef int storage_direct_free(StorageHandle* h) except -1 nogil

cdef class Handle:
    cdef StorageHandle h
    cdef bint live
