"""The CPU kernels of hard_sigmoid and _backward_hard_sigmoid
(hard_sigmoid_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "hard_sigmoid_cpu.h" namespace "mxop" nogil:
    int hard_sigmoid_forward(MXOpCall* c)
    int hard_sigmoid_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>hard_sigmoid_forward,
            "backward": <size_t><MXFCompute>hard_sigmoid_backward}
