# Row-major BLAS/LAPACK helpers shared by _linalg_cpu.pyx and
# _linalg_grad_cpu.pyx (included, so both compile them inline).  scipy's
# cython_blas / cython_lapack are column-major: a row-major matrix is read as
# its transpose, so each helper swaps sides, triangles or operands instead of
# copying data.  All run without the GIL.  A kernel's batch of matrices is
# split across the process-wide thread pool with split_batch.
from libc.math cimport log, fabs
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from scipy.linalg.cython_blas cimport sgemm, dgemm, strmm, dtrmm, strsm, dtrsm
from scipy.linalg.cython_lapack cimport (spotrf, dpotrf, spotri, dpotri, sgeqrf, dgeqrf,
                                         sorgqr, dorgqr, ssyevd, dsyevd, sgetrf, dgetrf,
                                         sgetri, dgetri)

from mx_ops.core._types cimport (MXFCompute, MXOpCall, MXTBlob, MX_FLOAT32, MX_FLOAT64,
                                 MX_REQ_NULL, MX_REQ_ADD, mx_tblob_size)

cdef extern from "parallel.h" namespace "mxop" nogil:
    int parallel_threads(int64_t work, int64_t items)

ctypedef fused real:
    float
    double


# --- the batch split ---------------------------------------------------------------
cdef extern from "batch_run.h" namespace "mxop" nogil:
    ctypedef int (*LinalgItem)(const void* ctx, int64_t i) noexcept nogil
    int64_t linalg_batch_run(int nt, int64_t n, LinalgItem fn, const void* ctx)


cdef struct Batch:
    # What a kernel's per-matrix function needs besides the matrix's index:
    # the call (its inputs, outputs and parameters), output 0's data as the
    # kernel sees it (double or float: dbl), the kernel's variant (potri or
    # potrf, trsm or trmm, ...) and its per-matrix function for each dtype.
    MXOpCall* c
    void* out
    bint dbl
    bint flag
    bint flag2
    int (*f)(const Batch*, float*, int64_t) noexcept nogil
    int (*d)(const Batch*, double*, int64_t) noexcept nogil


ctypedef int (*item_f)(const Batch*, float*, int64_t) noexcept nogil
ctypedef int (*item_d)(const Batch*, double*, int64_t) noexcept nogil


cdef int _batch_item(const void* ctx, int64_t i) noexcept nogil:
    cdef const Batch* b = <const Batch*>ctx
    if b.dbl:
        return b.d(b, <double*>b.out, i)
    return b.f(b, <float*>b.out, i)


cdef inline int64_t split_batch(MXOpCall* c, real* out, int64_t batch, int nt, item_f f,
                                item_d d, bint flag=False, bint flag2=False) noexcept nogil:
    """Runs the per-matrix function of out's dtype (f or d) for every
    matrix of the batch on up to nt threads of the pool; returns how many
    failed (returned nonzero)."""
    cdef Batch b
    b.c, b.out, b.flag, b.flag2 = c, out, flag, flag2
    b.f, b.d, b.dbl = f, d, real is double
    return linalg_batch_run(nt, batch, _batch_item, &b)


cdef inline int64_t _lead(const MXTBlob* b, int drop) noexcept nogil:
    """The product of b's axes but its last `drop` (the batch size)."""
    cdef int64_t n = 1
    cdef int i
    for i in range(b.ndim - drop):
        n *= b.shape[i]
    return n


cdef inline int _threads(int64_t batch, int64_t cost) noexcept nogil:
    """Workers for `batch` independent matrices of `cost` flops each: one
    when a matrix is large enough (about 128^3 flops) for the BLAS to split
    it across its own threads, which a team of ours would only oversubscribe."""
    if cost >= (<int64_t>1 << 21):
        return 1
    return parallel_threads(batch * cost, batch)


cdef inline void gemm_rm(bint ta, bint tb, int M, int N, int K, real alpha, const real* A,
                         int lda, const real* B, int ldb, real beta, real* C,
                         int ldc) noexcept nogil:
    """Row-major C (M x N) = alpha op(A) op(B) + beta C, as column-major
    C^T = op(B)^T op(A)^T."""
    cdef char opa = b'T' if ta else b'N'
    cdef char opb = b'T' if tb else b'N'
    if M == 0 or N == 0:
        return
    if lda < 1:
        lda = 1
    if ldb < 1:
        ldb = 1
    if real is float:
        sgemm(&opb, &opa, &N, &M, &K, &alpha, <real*>B, &ldb, <real*>A, &lda, &beta, C, &ldc)
    else:
        dgemm(&opb, &opa, &N, &M, &K, &alpha, <real*>B, &ldb, <real*>A, &lda, &beta, C, &ldc)


cdef inline void trmm_rm(bint right, bint lower, bint trans, int m, int n, real alpha,
                         const real* A, int lda, real* B, int ldb) noexcept nogil:
    """Row-major B (m x n) := alpha op(A) B (left) or alpha B op(A) (right),
    A triangular: the column-major view swaps the side and the triangle."""
    cdef char side = b'L' if right else b'R'
    cdef char uplo = b'U' if lower else b'L'
    cdef char ta = b'T' if trans else b'N'
    cdef char diag = b'N'
    if m == 0 or n == 0:
        return
    if real is float:
        strmm(&side, &uplo, &ta, &diag, &n, &m, &alpha, <real*>A, &lda, B, &ldb)
    else:
        dtrmm(&side, &uplo, &ta, &diag, &n, &m, &alpha, <real*>A, &lda, B, &ldb)


cdef inline void trsm_rm(bint right, bint lower, bint trans, int m, int n, real alpha,
                         const real* A, int lda, real* B, int ldb) noexcept nogil:
    """Row-major B (m x n) := alpha op(A)^-1 B (left) or alpha B op(A)^-1
    (right), A triangular."""
    cdef char side = b'L' if right else b'R'
    cdef char uplo = b'U' if lower else b'L'
    cdef char ta = b'T' if trans else b'N'
    cdef char diag = b'N'
    if m == 0 or n == 0:
        return
    if real is float:
        strsm(&side, &uplo, &ta, &diag, &n, &m, &alpha, <real*>A, &lda, B, &ldb)
    else:
        dtrsm(&side, &uplo, &ta, &diag, &n, &m, &alpha, <real*>A, &lda, B, &ldb)


cdef inline void zero_triangle(real* A, int n, bint upper) noexcept nogil:
    """Zeroes the strict upper (or lower) triangle of row-major A (n x n)."""
    cdef int i, j
    for i in range(n):
        for j in range(n):
            if (j > i) if upper else (j < i):
                A[i * n + j] = 0


cdef inline void copy_lower_to_upper(real* A, int n) noexcept nogil:
    """MXNet's copyLTU: the strict upper triangle becomes the lower's mirror."""
    cdef int i, j
    for i in range(n):
        for j in range(i):
            A[j * n + i] = A[i * n + j]


cdef inline void copy_upper_to_lower(real* A, int n) noexcept nogil:
    cdef int i, j
    for i in range(n):
        for j in range(i):
            A[i * n + j] = A[j * n + i]


cdef inline int lu_inverse(real* A, int n, int* ipiv, real* work, int lwork) noexcept nogil:
    """Row-major A := A^-1 in place (the inverse of the transpose is the
    transpose of the inverse); the LAPACK info (> 0: singular)."""
    cdef int info = 0
    if n == 0:
        return 0
    if real is float:
        sgetrf(&n, &n, A, &n, ipiv, &info)
        if info == 0:
            sgetri(&n, A, &n, ipiv, work, &lwork, &info)
    else:
        dgetrf(&n, &n, A, &n, ipiv, &info)
        if info == 0:
            dgetri(&n, A, &n, ipiv, work, &lwork, &info)
    return info


ctypedef int (*body_f)(MXOpCall*, float*) noexcept nogil
ctypedef int (*body_d)(MXOpCall*, double*) noexcept nogil


cdef inline int by_dtype(MXOpCall* c, body_f f, body_d d) noexcept nogil:
    """Runs the float32 or float64 specialization of a kernel body on output 0."""
    if c.outputs[0].dtype == MX_FLOAT64:
        return d(c, <double*>c.outputs[0].dptr)
    return f(c, <float*>c.outputs[0].dptr)


cdef int with_reqs(MXOpCall* c, int (*body)(MXOpCall*) noexcept nogil) noexcept nogil:
    """Runs `body`, which writes its outputs, under the call's reqs: nothing
    when every req is 'null'; for 'add' (or 'null' beside a written output)
    the output goes to a scratch buffer, added to (or dropped from) the
    real one afterwards."""
    cdef MXTBlob outs[4]
    cdef MXOpCall call = c[0]
    cdef int k, rc, any_out = 0
    cdef int64_t n, i
    cdef size_t item
    for k in range(c.nout):
        item = 8 if c.outputs[k].dtype == MX_FLOAT64 else 4
        any_out |= c.req[k] != MX_REQ_NULL
        outs[k] = c.outputs[k]
        if c.req[k] == MX_REQ_ADD or c.req[k] == MX_REQ_NULL:
            outs[k].dptr = malloc(max(mx_tblob_size(&outs[k]), 1) * item)
            if outs[k].dptr == NULL:
                for i in range(k):
                    if outs[i].dptr != c.outputs[i].dptr:
                        free(outs[i].dptr)
                c.error = "out of memory for a linalg scratch output"
                return -1
    if not any_out:
        for k in range(c.nout):
            free(outs[k].dptr)
        return 0
    call.outputs = outs
    rc = body(&call)
    if rc != 0:
        c.error = call.error
    for k in range(c.nout):
        if outs[k].dptr == c.outputs[k].dptr:
            continue
        if rc == 0 and c.req[k] == MX_REQ_ADD:
            n = mx_tblob_size(&outs[k])
            if outs[k].dtype == MX_FLOAT64:
                for i in range(n):
                    (<double*>c.outputs[k].dptr)[i] += (<double*>outs[k].dptr)[i]
            elif outs[k].dtype == MX_FLOAT32:
                for i in range(n):
                    (<float*>c.outputs[k].dptr)[i] += (<float*>outs[k].dptr)[i]
            else:                   # det's int32 pivots
                for i in range(n):
                    (<int32_t*>c.outputs[k].dptr)[i] += (<int32_t*>outs[k].dptr)[i]
        free(outs[k].dptr)
    return rc
