"""The reduction CPU kernels (reduce_cpu.h), as addresses of their
compute functions for the registry: sum, mean, prod, nansum, nanprod, max,
min, norm, argmax, argmin and argmax_channel."""
from mx_ops.core._types cimport MXFCompute

cdef extern from "reduce_cpu.h" namespace "mxop::red" nogil:
    cdef struct NamedKernel:
        const char* name
        MXFCompute fn
    const NamedKernel kReduceKernels[]


def kernels():
    """{name: address of its MXFCompute}."""
    out = {}
    cdef int i = 0
    while kReduceKernels[i].name != NULL:
        out[kReduceKernels[i].name.decode()] = <size_t>kReduceKernels[i].fn
        i += 1
    return out
