# The fast size check of mx_ops.core._limits, for the allocating paths above.
from libc.stdint cimport int64_t

cdef int64_t array_nbytes(tuple shape, Py_ssize_t itemsize) except -2
