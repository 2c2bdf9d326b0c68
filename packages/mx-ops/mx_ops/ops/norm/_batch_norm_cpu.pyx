"""The CPU kernels of BatchNorm and _backward_BatchNorm (batch_norm_cpu.h),
as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "batch_norm_cpu.h" namespace "mxop" nogil:
    int batch_norm_forward(MXOpCall* c)
    int batch_norm_backward(MXOpCall* c)
    const long long kBnWorkspaceVectors
    const long long kBnMaxBlocks


def kernels():
    """{name: address} of each kernel."""
    return {"forward": <size_t><MXFCompute>batch_norm_forward,
            "backward": <size_t><MXFCompute>batch_norm_backward}


def workspace_doubles(channels):
    """Doubles of temporary space one call over ``channels`` channels needs:
    per-channel vectors, then two partial sums per (block, channel)."""
    return (kBnWorkspaceVectors + 2 * kBnMaxBlocks) * channels
