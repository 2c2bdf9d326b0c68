"""The CPU kernels of LayerNorm, GroupNorm and InstanceNorm and their
backward (row_norm_cpu.h), as addresses."""
from libc.stdint cimport int64_t

from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "row_norm_cpu.h" namespace "mxop" nogil:
    int row_norm_forward(MXOpCall* c)
    int row_norm_backward(MXOpCall* c)
    int64_t row_norm_workspace_doubles(int64_t outer, int64_t n, int64_t inner,
                                       int64_t per_row)


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>row_norm_forward,
            "backward": <size_t><MXFCompute>row_norm_backward}


def workspace_doubles(int64_t outer, int64_t n, int64_t inner, int64_t per_row):
    """Doubles of temporary space the backward over an (outer, n, inner) view
    needs."""
    return row_norm_workspace_doubles(outer, n, inner, per_row)
