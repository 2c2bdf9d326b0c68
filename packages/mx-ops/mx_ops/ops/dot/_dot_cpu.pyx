"""dot and batch_dot on the CPU (dot_cpu.h): the products on the NN
kernels' GEMM core, split over one team with packing buffers from the
call's workspace (TEMP_SPACE), the transposes read by the packers.
float16 goes through float32 buffers; integer dtypes are not supported."""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc, free

from mx_ops.core._types cimport (MXFCompute, MXOpCall, MXTBlob, MX_FLOAT32, MX_FLOAT64, MX_FLOAT16,
                                 MX_REQ_NULL, MX_REQ_ADD, mx_tblob_size)

from scipy.linalg.cython_blas cimport sgemm, dgemm

cdef extern from "dot_cpu.h" namespace "mxop" nogil:
    void gemm_batch_set_blas(void* sgemm, void* dgemm)
    int dot_products_any(MXOpCall* c, int dtype, int64_t batch, int64_t M, int64_t N, int64_t K,
                         bint ta, bint tb, const void* A, const void* B, void* C, bint add)
    int64_t gemm_batch_workspace_bytes(int threads)
    int c_max_threads "mxop::max_threads"()

include "mx_ops/core/_isa.pxi"

gemm_batch_set_blas(<void*>sgemm, <void*>dgemm)     # small products (dot_cpu.h)

cdef extern from *:
    """
    #include <stdint.h>
    static void mx_h2f(const void *src, float *dst, int64_t n) {
        const _Float16 *s = (const _Float16 *)src;
        for (int64_t i = 0; i < n; ++i) dst[i] = (float)s[i];
    }
    static void mx_f2h(const float *src, void *dst, int64_t n) {
        _Float16 *d = (_Float16 *)dst;
        for (int64_t i = 0; i < n; ++i) d[i] = (_Float16)src[i];
    }
    """
    void mx_h2f(const void* src, float* dst, int64_t n) nogil
    void mx_f2h(const float* src, void* dst, int64_t n) nogil

# The packed parameters (mx_ops.ops.dot.dot): transpose flags.
cdef struct DotParam:
    int32_t transpose_a
    int32_t transpose_b


cdef inline int64_t _prod(const MXTBlob* b, int start, int stop) noexcept nogil:
    cdef int64_t n = 1
    cdef int i
    for i in range(start, stop):
        n *= b.shape[i]
    return n


cdef int _gemm_any(MXOpCall* c, int64_t batch, int64_t M, int64_t N, int64_t K) noexcept nogil:
    """batch GEMMs over contiguous blocks of the inputs and the output."""
    cdef const DotParam* p = <const DotParam*>c.params
    cdef int dtype = c.inputs[0].dtype
    cdef bint add = c.req[0] == MX_REQ_ADD
    cdef int64_t sa = M * K, sb = K * N, sc = M * N
    cdef int rc
    cdef float* fa = NULL
    cdef float* fb = NULL
    cdef float* fc = NULL
    cdef const char* A = <const char*>c.inputs[0].dptr
    cdef const char* B = <const char*>c.inputs[1].dptr
    cdef char* C = <char*>c.outputs[0].dptr
    if dtype != MX_FLOAT32 and dtype != MX_FLOAT64 and dtype != MX_FLOAT16:
        c.error = "unsupported dtype (dot needs float16, float32 or float64)"
        return -1
    if dtype == MX_FLOAT16:
        fa = <float*>malloc(max(batch * sa, 1) * sizeof(float))
        fb = <float*>malloc(max(batch * sb, 1) * sizeof(float))
        fc = <float*>malloc(max(batch * sc, 1) * sizeof(float))
        if fa == NULL or fb == NULL or fc == NULL:
            free(fa); free(fb); free(fc)
            c.error = "out of memory for float16 buffers"
            return -1
        mx_h2f(A, fa, batch * sa)
        mx_h2f(B, fb, batch * sb)
        if add:
            mx_h2f(C, fc, batch * sc)
        A = <const char*>fa
        B = <const char*>fb
        C = <char*>fc
        dtype = MX_FLOAT32
    rc = dot_products_any(c, dtype, batch, M, N, K, p.transpose_a, p.transpose_b, A, B, C, add)
    if fc != NULL:
        if rc == 0:
            mx_f2h(fc, c.outputs[0].dptr, batch * sc)
        free(fa); free(fb); free(fc)
    return rc


cdef int dot_kernel(MXOpCall* c) noexcept nogil:
    cdef const DotParam* p = <const DotParam*>c.params
    cdef const MXTBlob* l = &c.inputs[0]
    cdef const MXTBlob* r = &c.inputs[1]
    cdef int64_t M, N, K
    if c.req[0] == MX_REQ_NULL:
        return 0
    if l.ndim == 1 and r.ndim == 1:            # vector . vector -> shape (1,)
        M, N, K = 1, 1, l.shape[0]
    else:
        if p.transpose_a:
            K = l.shape[0]
            M = _prod(l, 1, l.ndim)
        else:
            M = _prod(l, 0, l.ndim - 1)
            K = l.shape[l.ndim - 1]
        N = _prod(r, 0, r.ndim - 1) if p.transpose_b else _prod(r, 1, r.ndim)
    return _gemm_any(c, 1, M, N, K)


cdef int batch_dot_kernel(MXOpCall* c) noexcept nogil:
    cdef const DotParam* p = <const DotParam*>c.params
    cdef const MXTBlob* l = &c.inputs[0]
    cdef const MXTBlob* r = &c.inputs[1]
    cdef int nd = l.ndim
    cdef int64_t batch = _prod(l, 0, nd - 2)
    cdef int64_t M = l.shape[nd - 1] if p.transpose_a else l.shape[nd - 2]
    cdef int64_t K = l.shape[nd - 2] if p.transpose_a else l.shape[nd - 1]
    cdef int64_t N = r.shape[nd - 2] if p.transpose_b else r.shape[nd - 1]
    if c.req[0] == MX_REQ_NULL:
        return 0
    return _gemm_any(c, batch, M, N, K)


def workspace_bytes(threads=None):
    """Bytes of workspace one call needs on ``threads`` threads (default:
    the thread pool's max threads): one GEMM's packing buffers per thread."""
    return gemm_batch_workspace_bytes(c_max_threads() if threads is None else threads)


def kernels():
    """{'dot': address, 'batch_dot': address}."""
    return {"dot": <size_t><MXFCompute>dot_kernel,
            "batch_dot": <size_t><MXFCompute>batch_dot_kernel}
