"""The CPU kernels of _contrib_quadratic (and its backward),
_contrib_div_sqrt_dim, _contrib_allclose, all_finite and multi_all_finite
(contrib_math_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "contrib_math_cpu.h" namespace "mxop" nogil:
    int contrib_quadratic(MXOpCall* c)
    int contrib_quadratic_backward(MXOpCall* c)
    int contrib_div_sqrt_dim(MXOpCall* c)
    int contrib_allclose(MXOpCall* c)
    int contrib_all_finite(MXOpCall* c)


def kernels():
    """{name: address} of the kernels above."""
    return {"quadratic": <size_t><MXFCompute>contrib_quadratic,
            "quadratic_backward": <size_t><MXFCompute>contrib_quadratic_backward,
            "div_sqrt_dim": <size_t><MXFCompute>contrib_div_sqrt_dim,
            "allclose": <size_t><MXFCompute>contrib_allclose,
            "all_finite": <size_t><MXFCompute>contrib_all_finite}
