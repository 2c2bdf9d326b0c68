"""The CPU kernels of CTCLoss (ctc_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "ctc_cpu.h" namespace "mxop" nogil:
    int ctc_loss_forward(MXOpCall* c)
    int ctc_loss_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>ctc_loss_forward,
            "backward": <size_t><MXFCompute>ctc_loss_backward}
