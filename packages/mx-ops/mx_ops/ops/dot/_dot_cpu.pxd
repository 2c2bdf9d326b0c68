# What other mx-ops kernels cimport from _dot_cpu (FullyConnected's GEMMs).
from libc.stdint cimport int64_t

cdef void _gemm(int dtype, bint ta, bint tb, int64_t M, int64_t N, int64_t K,
                const void* A, const void* B, void* C, bint add) noexcept nogil
