"""The CPU kernels of Embedding, UpSampling (nearest) and L2Normalization,
forward and backward (embedding_cpu.h, upsampling_cpu.h,
l2norm_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "embedding_cpu.h" namespace "mxop" nogil:
    int embedding_forward(MXOpCall* c)
    int embedding_backward(MXOpCall* c)

cdef extern from "upsampling_cpu.h" namespace "mxop" nogil:
    int upsample_forward(MXOpCall* c)
    int upsample_backward(MXOpCall* c)

cdef extern from "l2norm_cpu.h" namespace "mxop" nogil:
    int l2norm_forward(MXOpCall* c)
    int l2norm_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"embedding": <size_t><MXFCompute>embedding_forward,
            "embedding_backward": <size_t><MXFCompute>embedding_backward,
            "upsampling": <size_t><MXFCompute>upsample_forward,
            "upsampling_backward": <size_t><MXFCompute>upsample_backward,
            "l2norm": <size_t><MXFCompute>l2norm_forward,
            "l2norm_backward": <size_t><MXFCompute>l2norm_backward}
