"""Chunks: reference-counted blocks of device memory with their engine
variable (see _chunk.pxd)."""
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdlib cimport calloc, free

from mx_engine._engine cimport new_engine_var, delete_engine_var_then
from mx_storage._storage cimport storage_alloc, storage_free


cdef Chunk* _chunk_new(size_t nbytes, Context ctx) except NULL:
    cdef Chunk* c = <Chunk*>calloc(1, sizeof(Chunk))
    if c == NULL:
        raise MemoryError("NDArray: cannot allocate a chunk")
    try:
        storage_alloc(nbytes, ctx.device_typeid, ctx.device_id, &c.h)
        c.var = new_engine_var(NULL)
    except BaseException:
        if c.h.ptr != NULL:
            storage_free(&c.h)
        free(c)
        raise
    c.refs = 1
    return c


cdef Chunk* _chunk_foreign(void* ptr, size_t nbytes, object owner, int dev_type,
                           int dev_id) except NULL:
    """A chunk over memory (host or GPU) that ``owner`` keeps alive."""
    cdef Chunk* c = <Chunk*>calloc(1, sizeof(Chunk))
    if c == NULL:
        raise MemoryError("NDArray: cannot allocate a chunk")
    try:
        c.var = new_engine_var(NULL)
    except BaseException:
        free(c)
        raise
    c.h.ptr = ptr
    c.h.size = nbytes
    c.h.dev_type = dev_type
    c.h.dev_id = dev_id
    Py_INCREF(owner)
    c.owner = <PyObject*>owner
    c.refs = 1
    return c


cdef void _drop_owner(PyObject* owner) noexcept with gil:
    Py_XDECREF(owner)


cdef void _chunk_release_storage(void* arg) noexcept nogil:
    """Called by the engine once the chunk's variable is idle and freed."""
    cdef Chunk* c = <Chunk*>arg
    if c.owner != NULL:
        _drop_owner(c.owner)
    else:
        # A pool that refuses its own block is corrupt: Cython reports that
        # as unraisable here, and the chunk goes anyway.
        storage_free(&c.h)
    free(c)


cdef void _chunk_decref(Chunk* c) noexcept nogil:
    if mx_ref_dec(&c.refs) == 0:
        delete_engine_var_then(c.var, _chunk_release_storage, c)
