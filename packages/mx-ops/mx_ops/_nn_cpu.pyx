"""The CPU kernels of Activation, LeakyReLU, softmax / log_softmax and
Pooling, forward and backward (src/activation_cpu.h, src/softmax_cpu.h,
src/pool_cpu.h), as addresses."""
from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "activation_cpu.h" namespace "mxop" nogil:
    int activation_forward(MXOpCall* c)
    int activation_backward(MXOpCall* c)
    int leaky_forward(MXOpCall* c)
    int leaky_backward(MXOpCall* c)

cdef extern from "softmax_cpu.h" namespace "mxop" nogil:
    int softmax_forward(MXOpCall* c)
    int softmax_backward(MXOpCall* c)

cdef extern from "pool_cpu.h" namespace "mxop" nogil:
    int pool_forward(MXOpCall* c)
    int pool_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"activation": <size_t><MXFCompute>activation_forward,
            "activation_backward": <size_t><MXFCompute>activation_backward,
            "leaky": <size_t><MXFCompute>leaky_forward,
            "leaky_backward": <size_t><MXFCompute>leaky_backward,
            "softmax": <size_t><MXFCompute>softmax_forward,
            "softmax_backward": <size_t><MXFCompute>softmax_backward,
            "pool": <size_t><MXFCompute>pool_forward,
            "pool_backward": <size_t><MXFCompute>pool_backward}
