# The packed parameters of every linalg operator (linalg.py's _pack: "=8i2d").
cdef struct LinalgParam:
    int32_t transpose_a
    int32_t transpose_b
    int32_t transpose
    int32_t rightside
    int32_t lower
    int32_t offset
    int32_t axis          # gemm/gemm2's row axis, made non-negative
    int32_t pad
    double alpha
    double beta
