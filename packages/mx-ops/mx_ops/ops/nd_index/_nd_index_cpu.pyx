"""The CPU kernels of gather_nd, scatter_nd and _scatter_set_nd
(nd_index_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "nd_index_cpu.h" namespace "mxop" nogil:
    int nd_gather(MXOpCall* c)
    int nd_scatter(MXOpCall* c)
    int nd_scatter_set(MXOpCall* c)
    int nd_gather_backward(MXOpCall* c)


def kernels():
    """{'gather': address, 'scatter': address, 'scatter_set': address,
    'gather_backward': address}."""
    return {"gather": <size_t><MXFCompute>nd_gather, "scatter": <size_t><MXFCompute>nd_scatter,
            "scatter_set": <size_t><MXFCompute>nd_scatter_set,
            "gather_backward": <size_t><MXFCompute>nd_gather_backward}
