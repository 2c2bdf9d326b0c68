"""The CPU kernels of topk (sort, argsort) and its backward (sort_cpu.h),
as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "sort_cpu.h" namespace "mxop" nogil:
    int sort_topk(MXOpCall* c)
    int sort_topk_backward(MXOpCall* c)


def kernels():
    """{'topk': address, 'topk_backward': address}."""
    return {"topk": <size_t><MXFCompute>sort_topk,
            "topk_backward": <size_t><MXFCompute>sort_topk_backward}
