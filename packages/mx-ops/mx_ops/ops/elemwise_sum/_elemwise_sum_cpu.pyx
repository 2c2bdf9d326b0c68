"""The CPU kernel of add_n (elemwise_sum_cpu.h), as an address, and the
instruction set its accumulator passes run (``isa``, ``set_isa``)."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "elemwise_sum_cpu.h" namespace "mxop" nogil:
    int add_n(MXOpCall* c)

include "mx_ops/core/_isa.pxi"


def kernels():
    """{'add_n': address}."""
    return {"add_n": <size_t><MXFCompute>add_n}
