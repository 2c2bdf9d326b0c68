"""The CPU kernels of Convolution, Deconvolution and their backward ops
(src/conv_ops_cpu.h), as addresses.  GEMM is scipy's BLAS: its sgemm and
dgemm are handed to the C++ code once, at import."""
from scipy.linalg.cython_blas cimport sgemm, dgemm

from mx_ops._types cimport MXFCompute, MXOpCall

cdef extern from "conv_ops_cpu.h" namespace "mxop" nogil:
    ctypedef void (*sgemm_fn)(char*, char*, int*, int*, int*, float*, float*, int*, float*,
                              int*, float*, float*, int*)
    ctypedef void (*dgemm_fn)(char*, char*, int*, int*, int*, double*, double*, int*,
                              double*, int*, double*, double*, int*)
    void conv_set_blas(sgemm_fn s, dgemm_fn d)
    int convolution_forward(MXOpCall* c)
    int convolution_backward(MXOpCall* c)
    int deconvolution_forward(MXOpCall* c)
    int deconvolution_backward(MXOpCall* c)

conv_set_blas(<sgemm_fn>sgemm, <dgemm_fn>dgemm)


def kernels():
    """{operator name: address of its MXFCompute}."""
    return {"Convolution": <size_t><MXFCompute>convolution_forward,
            "_backward_Convolution": <size_t><MXFCompute>convolution_backward,
            "Deconvolution": <size_t><MXFCompute>deconvolution_forward,
            "_backward_Deconvolution": <size_t><MXFCompute>deconvolution_backward}
