"""The CPU strided-gather kernels (src/shape_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "shape_cpu.h" namespace "mxop" nogil:
    int shape_gather(MXOpCall* c)
    int shape_gather_scaled(MXOpCall* c)


def kernels():
    """{'gather': address, 'gather_scaled': address}."""
    return {"gather": <size_t><MXFCompute>shape_gather,
            "gather_scaled": <size_t><MXFCompute>shape_gather_scaled}
