# C-level API of the KVStore's native kernels (2bit gradient compression).
from libc.stdint cimport int64_t

cdef void quantize_2bit(const float* grad, float* residual, float* out, int64_t n,
                        float threshold) noexcept nogil
cdef void dequantize_2bit(const float* packed, float* out, int64_t n, float threshold,
                          bint accumulate) noexcept nogil
