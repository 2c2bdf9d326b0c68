"""The CPU kernels of _ravel_multi_index and _unravel_index (ravel_cpu.h),
as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "ravel_cpu.h" namespace "mxop" nogil:
    int index_ravel(MXOpCall* c)
    int index_unravel(MXOpCall* c)


def kernels():
    """{'ravel': address, 'unravel': address}."""
    return {"ravel": <size_t><MXFCompute>index_ravel,
            "unravel": <size_t><MXFCompute>index_unravel}
