# The autograd tape, backward side: replaying a cached backward program.
from mx_ndarray._ndarray cimport NDArray

cdef NDArray attached(NDArray a, object node, int index)
