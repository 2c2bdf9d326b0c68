"""The CPU kernels of Activation, LeakyReLU, softmax / log_softmax and
Pooling, forward and backward (src/activation_cpu.h, src/leaky_relu_cpu.h,
src/softmax_cpu.h, src/pool_cpu.h), as addresses.  LeakyReLU's forward
draws rrelu's training slopes from mx_storage's Philox stream
(fill_uniform_f32), handed to the C++ code as a function pointer."""
from libc.stdint cimport uint64_t

from mx_storage._philox cimport fill_uniform_f32
from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "activation_cpu.h" namespace "mxop" nogil:
    int activation_forward(MXOpCall* c)
    int activation_backward(MXOpCall* c)

cdef extern from "leaky_relu_cpu.h" namespace "mxop" nogil:
    ctypedef void (*UniformFill)(uint64_t, uint64_t, uint64_t, float*, size_t, float,
                                 float) noexcept nogil
    int leaky_forward(MXOpCall* c, UniformFill fill)
    int leaky_backward(MXOpCall* c)

cdef extern from "softmax_cpu.h" namespace "mxop" nogil:
    int softmax_forward(MXOpCall* c)
    int softmax_backward(MXOpCall* c)

cdef extern from "pool_cpu.h" namespace "mxop" nogil:
    int pool_forward(MXOpCall* c)
    int pool_backward(MXOpCall* c)


cdef int _leaky(MXOpCall* c) noexcept nogil:
    return leaky_forward(c, <UniformFill>fill_uniform_f32)


def kernels():
    """{name: address} of each kernel."""
    return {"activation": <size_t><MXFCompute>activation_forward,
            "activation_backward": <size_t><MXFCompute>activation_backward,
            "leaky": <size_t><MXFCompute>_leaky,
            "leaky_backward": <size_t><MXFCompute>leaky_backward,
            "softmax": <size_t><MXFCompute>softmax_forward,
            "softmax_backward": <size_t><MXFCompute>softmax_backward,
            "pool": <size_t><MXFCompute>pool_forward,
            "pool_backward": <size_t><MXFCompute>pool_backward}
