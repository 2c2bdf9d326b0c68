"""The CPU kernels of the layout family (layout_cpu.h), as addresses: the
table gather and its scatter-add; contrib arange_like (arange_like_cpu.h)."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "layout_cpu.h" namespace "mxop" nogil:
    int layout_gather(MXOpCall* c)
    int layout_scatter(MXOpCall* c)

cdef extern from "arange_like_cpu.h" namespace "mxop" nogil:
    int arange_like(MXOpCall* c)


def kernels():
    """{'gather', 'scatter', 'arange_like': address}."""
    return {"gather": <size_t><MXFCompute>layout_gather,
            "scatter": <size_t><MXFCompute>layout_scatter,
            "arange_like": <size_t><MXFCompute>arange_like}
