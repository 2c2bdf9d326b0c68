"""The CPU kernels of take, its backward and one_hot (index_cpu.h), as
addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "index_cpu.h" namespace "mxop" nogil:
    int index_take(MXOpCall* c)
    int index_one_hot(MXOpCall* c)
    int index_take_backward(MXOpCall* c)


def kernels():
    """{'take': address, 'one_hot': address, 'take_backward': address}."""
    return {"take": <size_t><MXFCompute>index_take,
            "one_hot": <size_t><MXFCompute>index_one_hot,
            "take_backward": <size_t><MXFCompute>index_take_backward}
