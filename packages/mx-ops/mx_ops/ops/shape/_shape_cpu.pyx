"""The CPU kernels of the shape family (shape_cpu.h), as addresses: the
strided gathers, shape_array and size_array."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "shape_cpu.h" namespace "mxop" nogil:
    int shape_gather(MXOpCall* c)
    int shape_gather_scaled(MXOpCall* c)
    int shape_array(MXOpCall* c)
    int size_array(MXOpCall* c)


def kernels():
    """{'gather', 'gather_scaled', 'shape_array', 'size_array': address}."""
    return {"gather": <size_t><MXFCompute>shape_gather,
            "gather_scaled": <size_t><MXFCompute>shape_gather_scaled,
            "shape_array": <size_t><MXFCompute>shape_array,
            "size_array": <size_t><MXFCompute>size_array}
