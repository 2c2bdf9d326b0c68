"""The CPU kernels of Concat and SliceChannel (join_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "join_cpu.h" namespace "mxop" nogil:
    int join_concat(MXOpCall* c)
    int join_split(MXOpCall* c)


def kernels():
    """{'concat': address, 'split': address}."""
    return {"concat": <size_t><MXFCompute>join_concat, "split": <size_t><MXFCompute>join_split}
