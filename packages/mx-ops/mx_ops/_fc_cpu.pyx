"""FullyConnected on the CPU: out = data . weight^T + bias as one GEMM
(_dot_cpu._gemm, BLAS without the GIL), and its backward as two GEMMs and a
column sum.  The bias is written first and the GEMM accumulates onto it, so
req 'write' costs no extra pass; req 'add' accumulates both.  float32 and
float64 only (mx_ops.fully_connected rejects other dtypes at inference)."""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free

from mx_ops._dot_cpu cimport _gemm
from mx_ops._types cimport (MXFCompute, MXOpCall, MX_FLOAT32, MX_FLOAT64, MX_REQ_NULL,
                            MX_REQ_ADD)

# The packed parameters (mx_ops.fully_connected): data as (M, K) rows,
# weight (N, K), and whether a bias input is present.
cdef struct FCParam:
    int32_t no_bias
    int32_t pad_
    int64_t M
    int64_t K
    int64_t N


cdef void _bias_rows(int dtype, const void* b, void* out, int64_t M, int64_t N,
                     bint add) noexcept nogil:
    """out[i, :] = b (or += b) for each of the M rows."""
    cdef int64_t i, j
    cdef float* fo = <float*>out
    cdef double* do = <double*>out
    cdef const float* fb = <const float*>b
    cdef const double* db = <const double*>b
    for i in range(M):
        if dtype == MX_FLOAT32:
            for j in range(N):
                fo[i * N + j] = fo[i * N + j] + fb[j] if add else fb[j]
        else:
            for j in range(N):
                do[i * N + j] = do[i * N + j] + db[j] if add else db[j]


cdef int fc_forward(MXOpCall* c) noexcept nogil:
    cdef const FCParam* p = <const FCParam*>c.params
    cdef int dtype = c.inputs[0].dtype
    cdef int32_t req = c.req[0]
    if req == MX_REQ_NULL:
        return 0
    if dtype != MX_FLOAT32 and dtype != MX_FLOAT64:
        c.error = "unsupported dtype (FullyConnected needs float32 or float64)"
        return -1
    if p.no_bias:
        _gemm(dtype, False, True, p.M, p.N, p.K, c.inputs[0].dptr, c.inputs[1].dptr,
              c.outputs[0].dptr, req == MX_REQ_ADD)
    elif req == MX_REQ_ADD:
        _gemm(dtype, False, True, p.M, p.N, p.K, c.inputs[0].dptr, c.inputs[1].dptr,
              c.outputs[0].dptr, True)
        _bias_rows(dtype, c.inputs[2].dptr, c.outputs[0].dptr, p.M, p.N, True)
    else:
        _bias_rows(dtype, c.inputs[2].dptr, c.outputs[0].dptr, p.M, p.N, False)
        if p.K > 0:
            _gemm(dtype, False, True, p.M, p.N, p.K, c.inputs[0].dptr, c.inputs[1].dptr,
                  c.outputs[0].dptr, True)
    return 0


cdef int _column_sums(int dtype, const void* g, void* out, int64_t M, int64_t N,
                      bint add) noexcept nogil:
    """out[j] (+)= sum_i g[i, j], summed row by row in float64 so the reads
    stay contiguous and float32 keeps its precision."""
    cdef double* acc = <double*>calloc(N if N > 0 else 1, sizeof(double))
    cdef int64_t i, j
    if acc == NULL:
        return -1
    for i in range(M):
        if dtype == MX_FLOAT32:
            for j in range(N):
                acc[j] += (<const float*>g)[i * N + j]
        else:
            for j in range(N):
                acc[j] += (<const double*>g)[i * N + j]
    for j in range(N):
        if dtype == MX_FLOAT32:
            (<float*>out)[j] = <float>(acc[j] + (<float*>out)[j]) if add else <float>acc[j]
        else:
            (<double*>out)[j] = acc[j] + (<double*>out)[j] if add else acc[j]
    free(acc)
    return 0


cdef void _zero(int dtype, void* out, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if dtype == MX_FLOAT32:
            (<float*>out)[i] = 0
        else:
            (<double*>out)[i] = 0


cdef int fc_backward(MXOpCall* c) noexcept nogil:
    """Inputs (out_grad, data, weight); outputs (data_grad, weight_grad
    [, bias_grad]): dX = dY . W, dW = dY^T . X, db = column sums of dY."""
    cdef const FCParam* p = <const FCParam*>c.params
    cdef int dtype = c.inputs[0].dtype
    if dtype != MX_FLOAT32 and dtype != MX_FLOAT64:
        c.error = "unsupported dtype (FullyConnected needs float32 or float64)"
        return -1
    if c.req[0] != MX_REQ_NULL:
        if p.N == 0 and c.req[0] != MX_REQ_ADD:      # an empty sum: BLAS skips k == 0
            _zero(dtype, c.outputs[0].dptr, p.M * p.K)
        _gemm(dtype, False, False, p.M, p.K, p.N, c.inputs[0].dptr, c.inputs[2].dptr,
              c.outputs[0].dptr, c.req[0] == MX_REQ_ADD)
    if c.req[1] != MX_REQ_NULL:
        if p.M == 0 and c.req[1] != MX_REQ_ADD:
            _zero(dtype, c.outputs[1].dptr, p.N * p.K)
        _gemm(dtype, True, False, p.N, p.K, p.M, c.inputs[0].dptr, c.inputs[1].dptr,
              c.outputs[1].dptr, c.req[1] == MX_REQ_ADD)
    if not p.no_bias and c.req[2] != MX_REQ_NULL:
        if _column_sums(dtype, c.inputs[0].dptr, c.outputs[2].dptr, p.M, p.N,
                        c.req[2] == MX_REQ_ADD) != 0:
            c.error = "out of memory for the bias gradient"
            return -1
    return 0


def kernels():
    """{'forward': address, 'backward': address}."""
    return {"forward": <size_t><MXFCompute>fc_forward,
            "backward": <size_t><MXFCompute>fc_backward}
