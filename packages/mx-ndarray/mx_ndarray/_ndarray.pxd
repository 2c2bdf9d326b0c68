# C-level view of NDArray for the packages above (graph, kvstore, io).
from cpython.ref cimport PyObject
from mx_engine._engine cimport EngineVar
from mx_engine._context cimport Context
from mx_storage._storage cimport StorageHandle

# A block of device memory and the engine variable that orders its uses,
# reference counted so that the last owner (an array, or a pushed operator
# that still needs it) frees it, on any thread, without the GIL.  A chunk
# over memory it did not allocate (from_dlpack, from_numpy) holds a
# reference to the memory's owner instead, dropped with the GIL.
cdef struct Chunk:
    StorageHandle h
    EngineVar* var
    int refs
    PyObject* owner

cdef class NDArray:
    cdef Chunk* chunk
    cdef size_t offset          # bytes into the chunk
    cdef readonly tuple shape
    cdef int dtype_flag
    cdef readonly Context context
    cdef object _binary(self, other, str array_op, str scalar_op, str rscalar_op,
                        bint reflected)
    cdef NDArray _fast(self, str op_name, list inputs, const char* params, size_t size)
    cdef NDArray _assignable(self, value, tuple shape)
