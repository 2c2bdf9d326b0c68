"""The CPU kernel of _histogram (histogram_cpu.h), as an address."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "histogram_cpu.h" namespace "mxop" nogil:
    int histogram_run(MXOpCall* c)


def kernels():
    """{'histogram': address}."""
    return {"histogram": <size_t><MXFCompute>histogram_run}
