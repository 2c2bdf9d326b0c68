"""The interleaved attention matmuls on the CPU (attention_cpu.h): batches
of (batch, head) products on the GEMM core's batch entry (dot_cpu.h), split
over a team with packing buffers from the call's workspace (TEMP_SPACE),
reading and writing the interleaved projections in place.  float32 and
float64 (MXNet's CPU kernels take float32 only)."""
from libc.stdint cimport int64_t

from scipy.linalg.cython_blas cimport sgemm, dgemm

from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "attention_cpu.h" namespace "mxop" nogil:
    int att_selfatt_qk_kernel(MXOpCall* c)
    int att_selfatt_qk_backward_kernel(MXOpCall* c)
    int att_selfatt_valatt_kernel(MXOpCall* c)
    int att_selfatt_valatt_backward_kernel(MXOpCall* c)
    int att_encdec_qk_kernel(MXOpCall* c)
    int att_encdec_qk_backward_kernel(MXOpCall* c)
    int att_encdec_valatt_kernel(MXOpCall* c)
    int att_encdec_valatt_backward_kernel(MXOpCall* c)
    int64_t gemm_batch_workspace_bytes(int threads)
    void gemm_batch_set_blas(void* sgemm, void* dgemm)
    int c_max_threads "mxop::max_threads"()

include "mx_ops/core/_isa.pxi"

gemm_batch_set_blas(<void*>sgemm, <void*>dgemm)     # small products (dot_cpu.h)


def kernels():
    """{operator name: kernel address}."""
    return {
        "_contrib_interleaved_matmul_selfatt_qk": <size_t><MXFCompute>att_selfatt_qk_kernel,
        "_backward_interleaved_matmul_selfatt_qk":
            <size_t><MXFCompute>att_selfatt_qk_backward_kernel,
        "_contrib_interleaved_matmul_selfatt_valatt":
            <size_t><MXFCompute>att_selfatt_valatt_kernel,
        "_backward_interleaved_matmul_selfatt_valatt":
            <size_t><MXFCompute>att_selfatt_valatt_backward_kernel,
        "_contrib_interleaved_matmul_encdec_qk": <size_t><MXFCompute>att_encdec_qk_kernel,
        "_backward_interleaved_matmul_encdec_qk":
            <size_t><MXFCompute>att_encdec_qk_backward_kernel,
        "_contrib_interleaved_matmul_encdec_valatt":
            <size_t><MXFCompute>att_encdec_valatt_kernel,
        "_backward_interleaved_matmul_encdec_valatt":
            <size_t><MXFCompute>att_encdec_valatt_backward_kernel}


def workspace_bytes(threads=None):
    """Bytes of workspace one call needs on ``threads`` threads (default:
    the thread pool's max threads): one GEMM's packing buffers per thread."""
    return gemm_batch_workspace_bytes(c_max_threads() if threads is None else threads)
