"""The CPU kernels of clip and where (select_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "select_cpu.h" namespace "mxop" nogil:
    int select_clip(MXOpCall* c)
    int select_where(MXOpCall* c)


def kernels():
    """{'clip': address, 'where': address}."""
    return {"clip": <size_t><MXFCompute>select_clip, "where": <size_t><MXFCompute>select_where}
