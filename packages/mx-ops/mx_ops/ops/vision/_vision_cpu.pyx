"""The CPU kernels of the vision family, forward and backward
(roi_pooling_cpu.h, roi_align_cpu.h,
bilinear_resize_cpu.h, adaptive_pool_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "roi_pooling_cpu.h" namespace "mxop" nogil:
    int roi_pool_forward(MXOpCall* c)
    int roi_pool_backward(MXOpCall* c)

cdef extern from "roi_align_cpu.h" namespace "mxop" nogil:
    int roi_align_forward(MXOpCall* c)
    int roi_align_backward(MXOpCall* c)

cdef extern from "bilinear_resize_cpu.h" namespace "mxop" nogil:
    int bilinear_resize_forward(MXOpCall* c)
    int bilinear_resize_backward(MXOpCall* c)

cdef extern from "adaptive_pool_cpu.h" namespace "mxop" nogil:
    int adaptive_avg_pool_forward(MXOpCall* c)
    int adaptive_avg_pool_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"roi_pooling": <size_t><MXFCompute>roi_pool_forward,
            "roi_pooling_backward": <size_t><MXFCompute>roi_pool_backward,
            "roi_align": <size_t><MXFCompute>roi_align_forward,
            "roi_align_backward": <size_t><MXFCompute>roi_align_backward,
            "bilinear_resize": <size_t><MXFCompute>bilinear_resize_forward,
            "bilinear_resize_backward": <size_t><MXFCompute>bilinear_resize_backward,
            "adaptive_avg_pool": <size_t><MXFCompute>adaptive_avg_pool_forward,
            "adaptive_avg_pool_backward": <size_t><MXFCompute>adaptive_avg_pool_backward}
