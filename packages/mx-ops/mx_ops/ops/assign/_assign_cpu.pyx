"""The CPU kernels of _slice_assign, _slice_assign_scalar and the slices'
backward (assign_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "assign_cpu.h" namespace "mxop" nogil:
    int slice_assign(MXOpCall* c)
    int slice_assign_scalar(MXOpCall* c)
    int slice_backward(MXOpCall* c)


def kernels():
    """{'array': address, 'scalar': address, 'backward': address}."""
    return {"array": <size_t><MXFCompute>slice_assign,
            "scalar": <size_t><MXFCompute>slice_assign_scalar,
            "backward": <size_t><MXFCompute>slice_backward}
