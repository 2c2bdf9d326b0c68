"""The CPU kernels of take and one_hot (src/index_cpu.h), as addresses."""
from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "index_cpu.h" namespace "mxop" nogil:
    int index_take(MXOpCall* c)
    int index_one_hot(MXOpCall* c)


def kernels():
    """{'take': address, 'one_hot': address}."""
    return {"take": <size_t><MXFCompute>index_take,
            "one_hot": <size_t><MXFCompute>index_one_hot}
