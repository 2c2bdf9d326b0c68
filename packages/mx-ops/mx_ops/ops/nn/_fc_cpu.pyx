"""FullyConnected on the CPU (fc_cpu.h): out = data . weight^T + bias as
one GEMM split over the cores, its backward as two GEMMs and a column sum,
on the GEMM core of gemm_cpu.h with packing buffers from the call's
workspace (TEMP_SPACE).  float32 and float64 only (mx_ops.ops.nn.fully_connected
rejects other dtypes at inference)."""
from libc.stdint cimport int32_t, int64_t

from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "fc_cpu.h" namespace "mxop" nogil:
    # The packed parameters (mx_ops.ops.nn.fully_connected): data as (M, K) rows,
    # weight (N, K), and whether a bias input is present.
    ctypedef struct FCParam:
        int32_t no_bias
        int32_t pad_
        int64_t M
        int64_t K
        int64_t N
    int fc_forward(MXOpCall* c)
    int fc_backward(MXOpCall* c)
    int64_t fc_workspace_bytes(bint backward, const FCParam& p, int threads)
    int c_max_threads "mxop::max_threads"()

include "mx_ops/core/_isa.pxi"


def kernels():
    """{'forward': address, 'backward': address}."""
    return {"forward": <size_t><MXFCompute>fc_forward,
            "backward": <size_t><MXFCompute>fc_backward}


def workspace_bytes(bint backward, int64_t m, int64_t k, int64_t n, threads=None):
    """Bytes of workspace one call of FullyConnected (or its backward) on
    (M, K) rows and N hidden units needs with ``threads`` threads (default:
    the thread pool's max threads), for float32 or float64."""
    cdef FCParam p
    p.no_bias = 0
    p.pad_ = 0
    p.M, p.K, p.N = m, k, n
    return fc_workspace_bytes(backward, p, c_max_threads() if threads is None else threads)
