"""The CPU kernels of softmax_cross_entropy (softmax_ce_cpu.h), as
addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "softmax_ce_cpu.h" namespace "mxop" nogil:
    int softmax_ce_forward(MXOpCall* c)
    int softmax_ce_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>softmax_ce_forward,
            "backward": <size_t><MXFCompute>softmax_ce_backward}
