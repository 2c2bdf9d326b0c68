"""The CPU kernels of pick, batch_take, _backward_pick and
fill_element_0index (pick_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "pick_cpu.h" namespace "mxop" nogil:
    int index_pick(MXOpCall* c)
    int index_pick_backward(MXOpCall* c)
    int index_fill_element_0index(MXOpCall* c)


def kernels():
    """{'pick': address, 'pick_backward': address, 'fill_element_0index': address}."""
    return {"pick": <size_t><MXFCompute>index_pick,
            "pick_backward": <size_t><MXFCompute>index_pick_backward,
            "fill_element_0index": <size_t><MXFCompute>index_fill_element_0index}
