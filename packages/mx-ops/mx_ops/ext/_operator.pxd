# The Cython API of OperatorProperty-style operators (mx_ops.ext.operator):
# a native operator is a cdef class deriving from NativeOperator whose
# forward / backward run without the GIL on the engine's worker, called
# through an MXFCompute trampoline.  User code cimports it:
#
#     from mx_ops.ext._operator cimport NativeOperator, MXOpContext, MXBlobs
#
# and returns an instance from its OperatorProperty's create_operator with
# ``native = True`` on the property class.
from libc.stdint cimport int32_t, int64_t, uint64_t

from mx_ops.core._types cimport MXTBlob, MXRandomState

cdef extern from "mx_ops/operator.h" nogil:
    # A list of tensors: in_data, out_data, aux_states, out_grad, in_grad.
    # Entries a backward did not declare as dependencies are empty blobs
    # (dptr NULL, ndim 0), as MXNet passes empty TBlobs.
    ctypedef struct MXBlobs:
        int32_t size
        const MXTBlob* data

    # OpContext: training flag, device, and the requested resources.
    ctypedef struct MXOpContext:
        int32_t is_train        # 1 in training (Dropout drops), else 0
        int32_t dev_type        # MX_CPU
        int32_t dev_id
        int32_t has_random      # RANDOM / PARALLEL_RANDOM was requested
        void* stream            # NULL on the CPU
        void* workspace         # TEMP_SPACE: workspace_size bytes, 64-byte aligned
        int64_t workspace_size
        MXRandomState random    # element i of the stream: Philox (seed, offset + i)
        const char* error       # set with a static message before returning -1

cdef class NativeOperator:
    # Each returns 0, or -1 after setting ctx.error.  req holds one
    # MXOpReq per output (forward) or per input gradient (backward).
    cdef int forward(self, MXOpContext* ctx, MXBlobs in_data, const int32_t* req,
                     MXBlobs out_data, MXBlobs aux_states) noexcept nogil
    cdef int backward(self, MXOpContext* ctx, MXBlobs out_grad, MXBlobs in_data,
                      MXBlobs out_data, const int32_t* req, MXBlobs in_grad,
                      MXBlobs aux_states) noexcept nogil
