"""The CPU kernel of diag and its backward (diag_cpu.h), as an address."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "diag_cpu.h" namespace "mxop" nogil:
    int diag_run(MXOpCall* c)


def kernels():
    """{'diag': address}."""
    return {"diag": <size_t><MXFCompute>diag_run}
