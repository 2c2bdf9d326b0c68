"""The CPU kernel of the optimizer update operators (optimizer_cpu.h),
as an address: one kernel for every optimizer, the kind in its parameters."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "optimizer_cpu.h" namespace "mxop" nogil:
    int optimizer_update(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"update": <size_t><MXFCompute>optimizer_update}
