"""The CPU kernel of transpose (src/shape_cpu.h), as an address."""
from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "shape_cpu.h" namespace "mxop" nogil:
    int shape_transpose(MXOpCall* c)


def kernels():
    """{'transpose': address}."""
    return {"transpose": <size_t><MXFCompute>shape_transpose}
