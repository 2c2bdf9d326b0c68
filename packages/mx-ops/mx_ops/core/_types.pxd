# The kernel ABI of mx-ops (include/mx_ops/tblob.h), for Cython.
from libc.stdint cimport int32_t, int64_t, uint64_t

cdef extern from "mx_ops/tblob.h" nogil:
    enum:
        MX_MAX_DIM
    enum MXDType:
        MX_FLOAT32, MX_FLOAT64, MX_FLOAT16, MX_UINT8, MX_INT32, MX_INT8, MX_INT64
    enum MXOpReq:
        MX_REQ_NULL, MX_REQ_WRITE, MX_REQ_INPLACE, MX_REQ_ADD
    ctypedef struct MXTBlob:
        void* dptr
        int32_t ndim
        int32_t dtype
        int32_t dev_type
        int32_t dev_id
        int64_t shape[8]
    ctypedef struct MXOpCall:
        const void* params
        int32_t nin
        int32_t nout
        const MXTBlob* inputs
        const MXTBlob* outputs
        const int32_t* req
        void* workspace
        int64_t workspace_size
        void* stream
        const char* error
        int32_t is_train
        int32_t reserved
    ctypedef int (*MXFCompute)(MXOpCall* call) noexcept nogil
    int64_t mx_tblob_size(const MXTBlob* b)
    ctypedef struct MXRandomState:
        uint64_t seed
        uint64_t offset
    MXRandomState mx_random_state(const void* params, size_t params_size)
