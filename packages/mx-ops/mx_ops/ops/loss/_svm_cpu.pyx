"""The CPU kernel of _backward_SVMOutput (svm_cpu.h), as an address."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "svm_cpu.h" namespace "mxop" nogil:
    int svm_output_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"backward": <size_t><MXFCompute>svm_output_backward}
