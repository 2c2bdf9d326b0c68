"""The CPU kernels of _contrib_index_copy, its backward and
_contrib_index_array (contrib_index_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "contrib_index_cpu.h" namespace "mxop" nogil:
    int contrib_index_copy(MXOpCall* c)
    int contrib_index_copy_backward(MXOpCall* c)
    int contrib_index_array(MXOpCall* c)


def kernels():
    """{'index_copy': address, 'index_copy_backward': address, 'index_array': address}."""
    return {"index_copy": <size_t><MXFCompute>contrib_index_copy,
            "index_copy_backward": <size_t><MXFCompute>contrib_index_copy_backward,
            "index_array": <size_t><MXFCompute>contrib_index_array}
