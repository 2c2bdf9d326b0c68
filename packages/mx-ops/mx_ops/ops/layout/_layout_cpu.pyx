"""The CPU kernels of the layout family (layout_cpu.h), as addresses: the
table gather and its scatter-add; contrib arange_like (arange_like_cpu.h);
im2col and col2im (im2col_cpu.h)."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "layout_cpu.h" namespace "mxop" nogil:
    int layout_gather(MXOpCall* c)
    int layout_scatter(MXOpCall* c)

cdef extern from "arange_like_cpu.h" namespace "mxop" nogil:
    int arange_like(MXOpCall* c)

cdef extern from "im2col_cpu.h" namespace "mxop" nogil:
    int im2col(MXOpCall* c)
    int col2im(MXOpCall* c)


def kernels():
    """{'gather', 'scatter', 'arange_like', 'im2col', 'col2im': address}."""
    return {"gather": <size_t><MXFCompute>layout_gather,
            "scatter": <size_t><MXFCompute>layout_scatter,
            "arange_like": <size_t><MXFCompute>arange_like,
            "im2col": <size_t><MXFCompute>im2col,
            "col2im": <size_t><MXFCompute>col2im}
