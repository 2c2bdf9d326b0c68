# The Cython view of SimpleOp functions (include/mx_ops/simple_op.h): write
# a ``cdef int f(...) noexcept nogil`` of one of these types and register
# ``<size_t>&f`` through mx_ops.ext.simple_op.UnaryFunction(...) and friends.
from libc.stdint cimport int32_t, int64_t

from mx_ops.core._types cimport MXTBlob, MXRandomState

cdef extern from "mx_ops/simple_op.h" nogil:
    ctypedef struct MXEnvArguments:
        double scalar
        int32_t num_kwargs
        int32_t has_random
        const char* const* kwarg_keys
        const char* const* kwarg_values
        void* workspace
        int64_t workspace_size
        MXRandomState random

    ctypedef struct MXRunContext:
        int32_t dev_type
        int32_t dev_id
        void* stream
        int32_t is_train
        int32_t reserved
        const char* error

    ctypedef int (*MXUnaryFunction)(const MXTBlob* src, const MXEnvArguments* env,
                                    const MXTBlob* ret, int32_t req,
                                    MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXBinaryFunction)(const MXTBlob* lhs, const MXTBlob* rhs,
                                     const MXEnvArguments* env, const MXTBlob* ret,
                                     int32_t req, MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXUnaryGradFunctionT0)(const MXTBlob* out_grad, const MXEnvArguments* env,
                                          const MXTBlob* in_grad, int32_t req,
                                          MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXUnaryGradFunctionT1)(const MXTBlob* out_grad, const MXTBlob* out_value,
                                          const MXEnvArguments* env, const MXTBlob* in_grad,
                                          int32_t req, MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXUnaryGradFunctionT2)(const MXTBlob* out_grad, const MXTBlob* in_data0,
                                          const MXEnvArguments* env, const MXTBlob* in_grad,
                                          int32_t req, MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXBinaryGradFunctionT0)(const MXTBlob* out_grad, const MXEnvArguments* env,
                                           const MXTBlob* lhs_grad, const MXTBlob* rhs_grad,
                                           int32_t req_lhs_grad, int32_t req_rhs_grad,
                                           MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXBinaryGradFunctionT1)(const MXTBlob* out_grad, const MXTBlob* out_value,
                                           const MXEnvArguments* env, const MXTBlob* lhs_grad,
                                           const MXTBlob* rhs_grad, int32_t req_lhs_grad,
                                           int32_t req_rhs_grad,
                                           MXRunContext* ctx) noexcept nogil
    ctypedef int (*MXBinaryGradFunctionT2)(const MXTBlob* out_grad, const MXTBlob* lhs,
                                           const MXTBlob* rhs, const MXEnvArguments* env,
                                           const MXTBlob* lhs_grad, const MXTBlob* rhs_grad,
                                           int32_t req_lhs_grad, int32_t req_rhs_grad,
                                           MXRunContext* ctx) noexcept nogil
