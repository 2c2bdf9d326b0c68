"""The CPU kernels of smooth_l1 (smooth_l1_cpu.h), SimpleOp functions
registered by address in mx_ops.ops.loss.smooth_l1."""
from libc.stdint cimport int32_t

from mx_ops.core._types cimport MXTBlob
from mx_ops.ext._simple_op cimport (MXEnvArguments, MXRunContext, MXUnaryFunction,
                                    MXUnaryGradFunctionT2)

cdef extern from "smooth_l1_cpu.h" namespace "mxop" nogil:
    int smooth_l1_forward(const MXTBlob* src, const MXEnvArguments* env, const MXTBlob* ret,
                          int32_t req, MXRunContext* ctx)
    int smooth_l1_backward(const MXTBlob* out_grad, const MXTBlob* in_data0,
                           const MXEnvArguments* env, const MXTBlob* in_grad, int32_t req,
                           MXRunContext* ctx)


def kernels():
    """{'forward': address of the MXUnaryFunction, 'backward': address of
    the MXUnaryGradFunctionT2}."""
    return {"forward": <size_t><MXUnaryFunction>smooth_l1_forward,
            "backward": <size_t><MXUnaryGradFunctionT2>smooth_l1_backward}
