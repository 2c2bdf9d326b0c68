"""LRN's operator, written against the Cython operator API
(mx_ops/ext/_operator.pxd): a NativeOperator whose forward and backward run
without the GIL on the engine's worker and call the kernels of
lrn_cpu.h.  mx_ops.ops.norm.lrn registers its OperatorProperty."""
from libc.stdint cimport int32_t, int64_t

from mx_ops.ext._operator cimport NativeOperator, MXOpContext, MXBlobs

cdef extern from "lrn_cpu.h" namespace "mxop" nogil:
    cdef struct LRNParam:
        double alpha
        double beta
        double knorm
        int64_t nsize
    int lrn_forward(MXOpContext* c, const LRNParam* p, MXBlobs data, const int32_t* req,
                    MXBlobs out)
    int lrn_backward(MXOpContext* c, const LRNParam* p, MXBlobs out_grad, MXBlobs in_data,
                     MXBlobs out_data, const int32_t* req, MXBlobs in_grad)
    int64_t lrn_backward_workspace(int64_t elements, int32_t dtype)


cdef class LRNOperator(NativeOperator):
    """LRN with one parameter set; the property creates it."""
    cdef LRNParam p

    def __init__(self, double alpha, double beta, double knorm, int64_t nsize):
        self.p.alpha = alpha
        self.p.beta = beta
        self.p.knorm = knorm
        self.p.nsize = nsize

    cdef int forward(self, MXOpContext* ctx, MXBlobs in_data, const int32_t* req,
                     MXBlobs out_data, MXBlobs aux_states) noexcept nogil:
        return lrn_forward(ctx, &self.p, in_data, req, out_data)

    cdef int backward(self, MXOpContext* ctx, MXBlobs out_grad, MXBlobs in_data,
                      MXBlobs out_data, const int32_t* req, MXBlobs in_grad,
                      MXBlobs aux_states) noexcept nogil:
        return lrn_backward(ctx, &self.p, out_grad, in_data, out_data, req, in_grad)


def backward_workspace(int64_t elements, int32_t dtype_flag):
    """Bytes of temporary space the backward needs."""
    return lrn_backward_workspace(elements, dtype_flag)
