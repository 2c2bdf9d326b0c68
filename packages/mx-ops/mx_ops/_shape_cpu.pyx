"""The CPU strided-gather kernel (src/shape_cpu.h), as an address."""
from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "shape_cpu.h" namespace "mxop" nogil:
    int shape_gather(MXOpCall* c)


def kernels():
    """{'gather': address}."""
    return {"gather": <size_t><MXFCompute>shape_gather}
