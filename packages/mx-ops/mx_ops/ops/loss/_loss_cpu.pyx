"""The CPU backward kernels of the output (loss) operators: SoftmaxOutput,
the regression outputs and MakeLoss (loss_cpu.h), as addresses.  Their
forwards reuse the softmax and elementwise kernels."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "loss_cpu.h" namespace "mxop" nogil:
    int softmax_output_backward(MXOpCall* c)
    int regression_backward(MXOpCall* c)
    int make_loss_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"softmax_output_backward": <size_t><MXFCompute>softmax_output_backward,
            "regression_backward": <size_t><MXFCompute>regression_backward,
            "make_loss_backward": <size_t><MXFCompute>make_loss_backward}
