"""The CPU kernels of moments and _backward_moments (moments_cpu.h), as
addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "moments_cpu.h" namespace "mxop" nogil:
    int moments_forward(MXOpCall* c)
    int moments_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>moments_forward,
            "backward": <size_t><MXFCompute>moments_backward}
