"""The CPU kernels of Dropout and _backward_Dropout (dropout_cpu.h), as
addresses.  The forward kernel draws its mask from mx_storage's Philox
stream (fill_uniform_f32), handed to the C++ code as a function pointer."""
from libc.stdint cimport uint64_t

from mx_ops.core._types cimport MXFCompute, MXOpCall
from mx_storage._philox cimport fill_uniform_f32

cdef extern from "dropout_cpu.h" namespace "mxop" nogil:
    ctypedef void (*UniformFill)(uint64_t, uint64_t, uint64_t, float*, size_t, float,
                                 float) noexcept nogil
    int dropout_forward(MXOpCall* c, UniformFill fill)
    int dropout_backward(MXOpCall* c)


cdef int _forward(MXOpCall* c) noexcept nogil:
    return dropout_forward(c, <UniformFill>fill_uniform_f32)


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>_forward,
            "backward": <size_t><MXFCompute>dropout_backward}
