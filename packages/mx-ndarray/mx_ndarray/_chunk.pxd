# Chunks: a block of device memory and the engine variable that orders its
# uses, reference counted so that the last owner (an array, or a pushed
# operator that still needs it) frees it, on any thread, without the GIL.
# A chunk over memory it did not allocate (from_dlpack, from_numpy) holds a
# reference to the memory's owner instead, dropped with the GIL.
from cpython.ref cimport PyObject
from mx_engine._engine cimport EngineVar
from mx_engine._context cimport Context
from mx_storage._storage cimport StorageHandle

cdef struct Chunk:
    StorageHandle h
    EngineVar* var
    int refs
    PyObject* owner

cdef extern from *:
    """
    static inline void mx_ref_inc(int *p) { __atomic_add_fetch(p, 1, __ATOMIC_RELAXED); }
    static inline int mx_ref_dec(int *p) { return __atomic_sub_fetch(p, 1, __ATOMIC_ACQ_REL); }
    """
    void mx_ref_inc(int* p) nogil
    int mx_ref_dec(int* p) nogil

cdef Chunk* _chunk_new(size_t nbytes, Context ctx) except NULL
cdef Chunk* _chunk_foreign(void* ptr, size_t nbytes, object owner, int dev_type,
                           int dev_id) except NULL
cdef void _drop_owner(PyObject* owner) noexcept with gil
cdef void _chunk_decref(Chunk* c) noexcept nogil


cdef inline void _chunk_incref(Chunk* c) noexcept nogil:
    mx_ref_inc(&c.refs)
