# The C-level part of the TEMP_SPACE resource (mx_storage.resource): the
# call path takes a workspace and grows its block without Python calls.
from mx_storage._storage cimport Handle

cdef class TempSlot:
    cdef public Handle _handle      # the workspace's block, None before the first use
    cdef public object var          # its engine Var (set by Resource.__init__)
    cdef public object ctx
    cdef Handle grow(self, size_t nbytes)

cdef class Copies:
    cdef public list items
    cdef public Py_ssize_t turn
    cdef readonly int dev_type
    cdef readonly int dev_id

cdef object next_copy(int kind, int dev_type, int dev_id)
cdef TempSlot next_temp(int dev_type, int dev_id)
