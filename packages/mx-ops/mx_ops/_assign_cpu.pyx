"""The CPU kernels of _slice_assign and _slice_assign_scalar
(src/assign_cpu.h), as addresses."""
from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "assign_cpu.h" namespace "mxop" nogil:
    int slice_assign(MXOpCall* c)
    int slice_assign_scalar(MXOpCall* c)


def kernels():
    """{'array': address, 'scalar': address}."""
    return {"array": <size_t><MXFCompute>slice_assign,
            "scalar": <size_t><MXFCompute>slice_assign_scalar}
