"""The CPU kernels of softmax_cross_entropy (softmax_ce_cpu.h), as
addresses, and the instruction set their exps run (``isa``, ``set_isa``:
for the tests)."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "softmax_ce_cpu.h" namespace "mxop" nogil:
    int softmax_ce_forward(MXOpCall* c)
    int softmax_ce_backward(MXOpCall* c)


include "mx_ops/core/_isa.pxi"


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>softmax_ce_forward,
            "backward": <size_t><MXFCompute>softmax_ce_backward}
