"""The linalg operators' forward kernels on the CPU: BLAS/LAPACK through
scipy's cython_blas / cython_lapack (the BLAS scipy ships; the dot family
uses it too), without the GIL, the batch of matrices split across the
process-wide thread pool when the work is large (split_batch).  float32 and
float64 only, as in MXNet."""
include "_linalg_blas.pxi"
include "_linalg_param.pxi"


cdef inline int _n(const MXTBlob* b) noexcept nogil:
    return <int>b.shape[b.ndim - 1]


cdef inline void _copy_in(MXOpCall* c, int i, int o) noexcept nogil:
    """Output o := input i (the operators that work in place), unless they
    share memory."""
    cdef size_t item = 8 if c.inputs[i].dtype == MX_FLOAT64 else 4
    if c.outputs[o].dptr != c.inputs[i].dptr:
        memcpy(c.outputs[o].dptr, c.inputs[i].dptr, mx_tblob_size(&c.inputs[i]) * item)


# --- gemm, gemm2 -----------------------------------------------------------------
cdef extern from "../dot/dot_cpu.h" namespace "mxop" nogil:
    # The GEMM core's batch entry (dot_cpu.h), shared with dot and batch_dot:
    # not scipy's threaded BLAS, whose threads stall each other when engine
    # workers run products at once.
    ctypedef struct GemmBatch:
        int64_t batch, inner, M, N, K
        int32_t ta, tb
        double alpha
        const void* A
        const void* B
        void* C
        int64_t lda, ldb, ldc
        int64_t sa_outer, sa_inner, sb_outer, sb_inner, sc_outer, sc_inner
    int gemm_batch(MXOpCall* c, int dtype, const GemmBatch& g, bint add)
    void gemm_batch_set_blas(void* sgemm, void* dgemm)
    int64_t gemm_batch_workspace_bytes(int threads)
    int c_max_threads "mxop::max_threads"()

gemm_batch_set_blas(<void*>sgemm, <void*>dgemm)     # small products (dot_cpu.h)

cdef extern from "blas_threads.h" namespace "mxop" nogil:
    void blas_threads_find(void* blas_function)
    bint blas_serial_available()
    void blas_serial_enter()
    void blas_serial_leave()

blas_threads_find(<void*>sgemm)


def blas_threads_held():
    """Whether a batch of large matrices is split across this module's
    workers with the BLAS's own thread count held at 1 (blas_threads.h)."""
    return blas_serial_available()


cdef inline int _split_threads(int64_t batch, int64_t cost, bint* serial) noexcept nogil:
    """_threads, except that a batch of matrices large enough for the BLAS's
    own threads is split across workers too where their count can be held
    at 1 (*serial: the caller holds it, blas_serial_enter/leave)."""
    cdef int nt = _threads(batch, cost)
    serial[0] = False
    if nt == 1 and batch > 1 and blas_serial_available():
        nt = parallel_threads(batch * cost, batch)
        serial[0] = nt > 1
    return nt


def gemm_workspace_bytes(threads=None):
    """Bytes of workspace one gemm/gemm2 call needs on ``threads`` threads
    (default: OpenMP's max threads)."""
    return gemm_batch_workspace_bytes(c_max_threads() if threads is None else threads)


cdef int _gemm_body(MXOpCall* c) noexcept nogil:
    """C = alpha op(A) op(B) (+ beta C for gemm) for every matrix of the
    batch; the matrices' rows lie on `axis`, their columns on the last axis,
    so a matrix is a strided view (leading dimension inner*cols), read in
    place by the GEMM's packers."""
    cdef const LinalgParam* p = <const LinalgParam*>c.params
    cdef const MXTBlob* o = &c.outputs[0]
    cdef int ax = p.axis, nd = o.ndim, d
    cdef int64_t outer = 1, inner = 1, n, i
    cdef int64_t ar = c.inputs[0].shape[ax], ac = _n(&c.inputs[0])
    cdef int64_t br = c.inputs[1].shape[ax], bc = _n(&c.inputs[1])
    cdef int64_t M = o.shape[ax], N = _n(o)
    cdef double beta = 0
    cdef GemmBatch g
    for d in range(ax):
        outer *= o.shape[d]
    for d in range(ax + 1, nd - 1):
        inner *= o.shape[d]
    if c.nin == 3:
        beta = p.beta
        _copy_in(c, 2, 0)
        if beta != 0 and beta != 1:     # beta C, then the product is added
            n = mx_tblob_size(o)
            if o.dtype == MX_FLOAT64:
                for i in range(n):
                    (<double*>o.dptr)[i] *= beta
            else:
                for i in range(n):
                    (<float*>o.dptr)[i] *= <float>beta
    g.batch, g.inner = outer * inner, inner
    g.M, g.N, g.K = M, N, (ar if p.transpose_a else ac)
    g.ta, g.tb, g.alpha = p.transpose_a, p.transpose_b, p.alpha
    g.A, g.lda, g.sa_outer, g.sa_inner = c.inputs[0].dptr, inner * ac, ar * inner * ac, ac
    g.B, g.ldb, g.sb_outer, g.sb_inner = c.inputs[1].dptr, inner * bc, br * inner * bc, bc
    g.C, g.ldc, g.sc_outer, g.sc_inner = o.dptr, inner * N, M * inner * N, N
    return gemm_batch(c, o.dtype, g, beta != 0)


# --- potrf, potri ----------------------------------------------------------------
cdef int _chol_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    """Matrix i of potrf (flag False) or potri (True); LAPACK's info."""
    cdef const LinalgParam* p = <const LinalgParam*>b.c.params
    cdef int n = _n(&b.c.inputs[0]), info = 0
    cdef char uplo = b'U' if p.lower else b'L'     # row-major lower = column-major upper
    cdef real* A = out + i * n * n
    if b.flag:
        if real is float:
            spotri(&uplo, &n, A, &n, &info)
        else:
            dpotri(&uplo, &n, A, &n, &info)
        if p.lower:
            copy_lower_to_upper(A, n)
        else:
            copy_upper_to_lower(A, n)
    else:
        if real is float:
            spotrf(&uplo, &n, A, &n, &info)
        else:
            dpotrf(&uplo, &n, A, &n, &info)
        zero_triangle(A, n, p.lower)
    return info


cdef int _chol_t(MXOpCall* c, real* out, bint inverse) noexcept nogil:
    """potrf (Cholesky factor, the other triangle zeroed) or potri (the
    inverse from the factor, both triangles), in place on a copy."""
    cdef int n = _n(&c.inputs[0])
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    cdef bint serial
    cdef int nt = _split_threads(batch, <int64_t>n * n * n, &serial)
    cdef int64_t failed
    _copy_in(c, 0, 0)
    if serial:
        blas_serial_enter()
    failed = split_batch(c, out, batch, nt, _chol_item[float], _chol_item[double], inverse)
    if serial:
        blas_serial_leave()
    if failed:
        c.error = ("potri failed in LAPACK: a factor has a zero on its diagonal" if inverse else
                   "potrf failed in LAPACK: the input matrix is either not symmetric or not "
                   "positive definite")
        return -1
    return 0


cdef int _potrf_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _chol_t(c, <double*>c.outputs[0].dptr, False)
    return _chol_t(c, <float*>c.outputs[0].dptr, False)


cdef int _potri_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _chol_t(c, <double*>c.outputs[0].dptr, True)
    return _chol_t(c, <float*>c.outputs[0].dptr, True)


# --- trmm, trsm ------------------------------------------------------------------
cdef int _tri_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    """Matrix i of trmm (flag False) or trsm (True)."""
    cdef const LinalgParam* p = <const LinalgParam*>b.c.params
    cdef const real* A = <const real*>b.c.inputs[0].dptr
    cdef int na = _n(&b.c.inputs[0]), n = _n(&b.c.inputs[1])
    cdef int m = <int>b.c.inputs[1].shape[b.c.inputs[1].ndim - 2]
    if b.flag:
        trsm_rm(p.rightside, p.lower, p.transpose, m, n, <real>p.alpha, A + i * na * na, na,
                out + i * m * n, n)
    else:
        trmm_rm(p.rightside, p.lower, p.transpose, m, n, <real>p.alpha, A + i * na * na, na,
                out + i * m * n, n)
    return 0


cdef int _tri_t(MXOpCall* c, real* out, bint solve) noexcept nogil:
    """out = alpha op(A) B / alpha B op(A) (trmm), or the solves (trsm)."""
    cdef int na = _n(&c.inputs[0]), n = _n(&c.inputs[1])
    cdef int m = <int>c.inputs[1].shape[c.inputs[1].ndim - 2]
    cdef int64_t batch = _lead(&c.inputs[1], 2)
    _copy_in(c, 1, 0)
    split_batch(c, out, batch, _threads(batch, <int64_t>na * m * n), _tri_item[float],
                _tri_item[double], solve)
    return 0


cdef int _trmm_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _tri_t(c, <double*>c.outputs[0].dptr, False)
    return _tri_t(c, <float*>c.outputs[0].dptr, False)


cdef int _trsm_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _tri_t(c, <double*>c.outputs[0].dptr, True)
    return _tri_t(c, <float*>c.outputs[0].dptr, True)


# --- syrk ------------------------------------------------------------------------
cdef int _syrk_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    cdef const LinalgParam* p = <const LinalgParam*>b.c.params
    cdef const real* A = <const real*>b.c.inputs[0].dptr
    cdef int k = _n(&b.c.inputs[0]), m = <int>b.c.inputs[0].shape[b.c.inputs[0].ndim - 2]
    cdef int r = k if p.transpose else m, inner = m if p.transpose else k
    gemm_rm(p.transpose, not p.transpose, r, r, inner, <real>p.alpha, A + i * m * k, k,
            A + i * m * k, k, 0, out + i * r * r, r)
    return 0


cdef int _syrk_t(MXOpCall* c, real* out) noexcept nogil:
    """out = alpha A A^T (or alpha A^T A), as a full GEMM: both triangles
    are wanted and the GEMM is the faster kernel in every BLAS."""
    cdef const LinalgParam* p = <const LinalgParam*>c.params
    cdef int k = _n(&c.inputs[0]), m = <int>c.inputs[0].shape[c.inputs[0].ndim - 2]
    cdef int r = k if p.transpose else m, inner = m if p.transpose else k
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    split_batch(c, out, batch, _threads(batch, <int64_t>r * r * inner), _syrk_item[float],
                _syrk_item[double])
    return 0


cdef int _syrk_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _syrk_t[float], _syrk_t[double])


# --- gelqf -----------------------------------------------------------------------
cdef int _gelqf_item(const Batch* b, real* Q, int64_t i) noexcept nogil:
    """Matrix i of gelqf; nonzero when out of memory."""
    cdef real* L = <real*>b.c.outputs[1].dptr
    cdef int m = <int>b.c.inputs[0].shape[b.c.inputs[0].ndim - 2], n = _n(&b.c.inputs[0])
    cdef int lwork = max(m, 1) * 64, info = 0, r, j
    cdef real* buf = <real*>malloc((m + lwork) * sizeof(real))
    if buf == NULL:
        return -1
    if real is float:
        sgeqrf(&n, &m, Q + i * m * n, &n, buf, buf + m, &lwork, &info)
    else:
        dgeqrf(&n, &m, Q + i * m * n, &n, buf, buf + m, &lwork, &info)
    for r in range(m):
        for j in range(m):
            L[i * m * m + r * m + j] = Q[i * m * n + r * n + j] if j <= r else 0
    if real is float:
        sorgqr(&n, &m, &m, Q + i * m * n, &n, buf, buf + m, &lwork, &info)
    else:
        dorgqr(&n, &m, &m, Q + i * m * n, &n, buf, buf + m, &lwork, &info)
    free(buf)
    return 0


cdef int _gelqf_t(MXOpCall* c, real* Q) noexcept nogil:
    """A (m x n, m <= n) = L Q.  Read column-major, A is A^T (n x m), whose
    QR factorization A^T = Q^T L^T LAPACK's geqrf/orgqr compute in place:
    R's upper triangle is L's lower one, the orthonormal columns Q's rows."""
    cdef int m = <int>c.inputs[0].shape[c.inputs[0].ndim - 2], n = _n(&c.inputs[0])
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    _copy_in(c, 0, 0)
    if split_batch(c, Q, batch, _threads(batch, <int64_t>m * m * n), _gelqf_item[float],
                   _gelqf_item[double]):
        c.error = "gelqf: out of memory for LAPACK's workspace"
        return -1
    return 0


cdef int _gelqf_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _gelqf_t[float], _gelqf_t[double])


# --- syevd -----------------------------------------------------------------------
cdef inline void _sign_rows(real* U, int n) noexcept nogil:
    """MXNet's sign convention: each eigenvector (a row of U) has its entry
    of largest magnitude (the first such) positive."""
    cdef int r, j, best
    for r in range(n):
        best = 0
        for j in range(1, n):
            if fabs(U[r * n + j]) > fabs(U[r * n + best]):
                best = j
        if U[r * n + best] < 0:
            for j in range(n):
                U[r * n + j] = -U[r * n + j]


cdef int _syevd_item(const Batch* b, real* U, int64_t i) noexcept nogil:
    """Matrix i of syevd; LAPACK's info (-1: out of memory)."""
    cdef real* L = <real*>b.c.outputs[1].dptr
    cdef int n = _n(&b.c.inputs[0]), info = 0
    cdef int lwork = 1 + 6 * n + 2 * n * n, liwork = 3 + 5 * n
    cdef char jobz = b'V', uplo = b'U'
    cdef real* work = <real*>malloc(lwork * sizeof(real))
    cdef int* iwork = <int*>malloc(liwork * sizeof(int))
    if work == NULL or iwork == NULL:
        info = -1
    elif real is float:
        ssyevd(&jobz, &uplo, &n, U + i * n * n, &n, L + i * n, work, &lwork, iwork,
               &liwork, &info)
    else:
        dsyevd(&jobz, &uplo, &n, U + i * n * n, &n, L + i * n, work, &lwork, iwork,
               &liwork, &info)
    free(work)
    free(iwork)
    if info == 0:
        _sign_rows(U + i * n * n, n)
    return info


cdef int _syevd_t(MXOpCall* c, real* U) noexcept nogil:
    """U A = diag(L) U: LAPACK's syevd leaves the eigenvectors in its
    column-major columns, which are U's rows; eigenvalues ascending."""
    cdef int n = _n(&c.inputs[0])
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    _copy_in(c, 0, 0)
    if split_batch(c, U, batch, _threads(batch, <int64_t>n * n * n), _syevd_item[float],
                   _syevd_item[double]):
        c.error = "syevd failed in LAPACK (no convergence, or out of memory)"
        return -1
    return 0


cdef int _syevd_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _syevd_t[float], _syevd_t[double])


# --- inverse ---------------------------------------------------------------------
cdef int _inverse_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    """Matrix i of inverse; nonzero when singular or out of memory."""
    cdef int n = _n(&b.c.inputs[0]), lwork = max(n, 1) * 64, info = -1
    cdef int* ipiv = <int*>malloc(n * sizeof(int) + lwork * sizeof(real))
    if ipiv != NULL:
        info = lu_inverse(out + i * n * n, n, ipiv, <real*>(ipiv + n), lwork)
    free(ipiv)
    return info


cdef int _inverse_t(MXOpCall* c, real* out) noexcept nogil:
    cdef int n = _n(&c.inputs[0])
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    cdef bint serial
    cdef int nt = _split_threads(batch, <int64_t>n * n * n, &serial)
    cdef int64_t failed
    _copy_in(c, 0, 0)
    if serial:
        blas_serial_enter()
    failed = split_batch(c, out, batch, nt, _inverse_item[float], _inverse_item[double])
    if serial:
        blas_serial_leave()
    if failed:
        c.error = "inverse: the input matrix is non-invertible"
        return -1
    return 0


cdef int _inverse_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _inverse_t[float], _inverse_t[double])


# --- det, slogdet ----------------------------------------------------------------
cdef int _det_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    """Matrix i of det (flag False) or slogdet (True)."""
    cdef bint logarithm = b.flag
    cdef real* logabs = <real*>b.c.outputs[1].dptr if logarithm else NULL
    cdef real* LU = <real*>b.c.outputs[2 if logarithm else 1].dptr
    cdef int* piv = <int*>b.c.outputs[3 if logarithm else 2].dptr
    cdef int n = _n(&b.c.inputs[0]), info = 0, j
    cdef real sign = 1, prod = 1, lsum = 0       # sign: the permutation's parity
    if n > 0:
        if real is float:
            sgetrf(&n, &n, LU + i * n * n, &n, piv + i * n, &info)
        else:
            dgetrf(&n, &n, LU + i * n * n, &n, piv + i * n, &info)
    for j in range(n):
        if piv[i * n + j] != j + 1:
            sign = -sign
        prod = prod * LU[i * n * n + j * n + j]
        lsum = lsum + log(fabs(LU[i * n * n + j * n + j]))
    if logarithm:
        out[i] = 0 if info > 0 else (sign if prod > 0 else -sign)
        logabs[i] = lsum
    else:
        out[i] = sign * prod
    return 0


cdef int _det_t(MXOpCall* c, real* out, bint logarithm) noexcept nogil:
    """From an LU factorization, kept in the hidden outputs LU and pivot as
    MXNet keeps them: det = the pivots' sign times the product of U's
    diagonal; slogdet keeps the sign and log|det| apart (sign 0 and -inf
    for a singular matrix)."""
    cdef int n = _n(&c.inputs[0])
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    _copy_in(c, 0, 2 if logarithm else 1)
    split_batch(c, out, batch, _threads(batch, <int64_t>n * n * n), _det_item[float],
                _det_item[double], logarithm)
    return 0


cdef int _det_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _det_t(c, <double*>c.outputs[0].dptr, False)
    return _det_t(c, <float*>c.outputs[0].dptr, False)


cdef int _slogdet_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _det_t(c, <double*>c.outputs[0].dptr, True)
    return _det_t(c, <float*>c.outputs[0].dptr, True)


# --- sumlogdiag and the diagonal / triangle copies (memory-bound loops) ------------
cdef int _sumlogdiag_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    cdef const real* A = <const real*>b.c.inputs[0].dptr
    cdef int n = _n(&b.c.inputs[0]), j
    cdef real s = 0
    for j in range(n):
        s = s + log(A[i * n * n + j * n + j])
    out[i] = s
    return 0


cdef int _sumlogdiag_t(MXOpCall* c, real* out) noexcept nogil:
    cdef int64_t batch = _lead(&c.inputs[0], 2)
    split_batch(c, out, batch, _threads(batch, _n(&c.inputs[0])), _sumlogdiag_item[float],
                _sumlogdiag_item[double])
    return 0


cdef int _sumlogdiag_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _sumlogdiag_t[float], _sumlogdiag_t[double])


cdef inline int64_t _tri_index(int64_t r, int64_t j) noexcept nogil:
    """Position of entry (r, j), j <= r, in a row-major packed lower triangle."""
    return r * (r + 1) // 2 + j


cdef int _diag_item(const Batch* b, real* out, int64_t i) noexcept nogil:
    """Matrix i of _diag_t (flag: make, flag2: trian)."""
    cdef const LinalgParam* p = <const LinalgParam*>b.c.params
    cdef bint make = b.flag, trian = b.flag2
    cdef const real* src = <const real*>b.c.inputs[0].dptr
    cdef int n = _n(&b.c.outputs[0] if make else &b.c.inputs[0]), off = p.offset
    cdef bint lower = off < 0 or (off == 0 and p.lower)
    cdef int d = -off if off < 0 else off
    cdef int64_t r, j, m = n - d, packed = m * (m + 1) // 2 if trian else m, at
    for r in range(m):
        for j in range(0 if trian else r, r + 1):      # a diagonal: j = r only
            at = (r + d) * n + j if lower else j * n + r + d   # (row, col) in the matrix
            if make:
                out[i * n * n + at] = src[i * packed + (_tri_index(r, j) if trian else r)]
            else:
                out[i * packed + (_tri_index(r, j) if trian else r)] = src[i * n * n + at]
    return 0


cdef int _diag_t(MXOpCall* c, real* out, bint make, bint trian) noexcept nogil:
    """extractdiag/makediag (trian False) and extracttrian/maketrian (True)
    between a batch of n x n matrices and their packed diagonals / triangles.
    A triangle is the lower one of rows d.. (d = -offset, or 0 with lower)
    packed row by row, or the upper one of columns d.. (d = offset) packed
    column by column: the transpose of the lower, as MXNet packs it."""
    cdef const MXTBlob* mat = &c.outputs[0] if make else &c.inputs[0]
    cdef int n = _n(mat)
    cdef int64_t batch = _lead(mat, 2)
    if make:
        memset(out, 0, batch * n * n * sizeof(real))
    split_batch(c, out, batch, _threads(batch, <int64_t>n * n), _diag_item[float],
                _diag_item[double], make, trian)
    return 0


cdef int _extractdiag_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _diag_t(c, <double*>c.outputs[0].dptr, False, False)
    return _diag_t(c, <float*>c.outputs[0].dptr, False, False)


cdef int _makediag_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _diag_t(c, <double*>c.outputs[0].dptr, True, False)
    return _diag_t(c, <float*>c.outputs[0].dptr, True, False)


cdef int _extracttrian_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _diag_t(c, <double*>c.outputs[0].dptr, False, True)
    return _diag_t(c, <float*>c.outputs[0].dptr, False, True)


cdef int _maketrian_body(MXOpCall* c) noexcept nogil:
    if c.outputs[0].dtype == MX_FLOAT64:
        return _diag_t(c, <double*>c.outputs[0].dptr, True, True)
    return _diag_t(c, <float*>c.outputs[0].dptr, True, True)


# --- the kernels under the reqs ------------------------------------------------------
cdef int gemm_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _gemm_body)


cdef int potrf_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _potrf_body)


cdef int potri_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _potri_body)


cdef int trmm_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _trmm_body)


cdef int trsm_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _trsm_body)


cdef int syrk_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _syrk_body)


cdef int gelqf_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _gelqf_body)


cdef int syevd_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _syevd_body)


cdef int inverse_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _inverse_body)


cdef int det_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _det_body)


cdef int slogdet_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _slogdet_body)


cdef int sumlogdiag_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _sumlogdiag_body)


cdef int extractdiag_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _extractdiag_body)


cdef int makediag_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _makediag_body)


cdef int extracttrian_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _extracttrian_body)


cdef int maketrian_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _maketrian_body)


def kernels():
    """{operator name: MXFCompute address}; gemm2 shares gemm's kernel (no C)."""
    return {"_linalg_gemm": <size_t><MXFCompute>gemm_kernel,
            "_linalg_gemm2": <size_t><MXFCompute>gemm_kernel,
            "_linalg_potrf": <size_t><MXFCompute>potrf_kernel,
            "_linalg_potri": <size_t><MXFCompute>potri_kernel,
            "_linalg_trmm": <size_t><MXFCompute>trmm_kernel,
            "_linalg_trsm": <size_t><MXFCompute>trsm_kernel,
            "_linalg_syrk": <size_t><MXFCompute>syrk_kernel,
            "_linalg_gelqf": <size_t><MXFCompute>gelqf_kernel,
            "_linalg_syevd": <size_t><MXFCompute>syevd_kernel,
            "_linalg_inverse": <size_t><MXFCompute>inverse_kernel,
            "_linalg_det": <size_t><MXFCompute>det_kernel,
            "_linalg_slogdet": <size_t><MXFCompute>slogdet_kernel,
            "_linalg_sumlogdiag": <size_t><MXFCompute>sumlogdiag_kernel,
            "_linalg_extractdiag": <size_t><MXFCompute>extractdiag_kernel,
            "_linalg_makediag": <size_t><MXFCompute>makediag_kernel,
            "_linalg_extracttrian": <size_t><MXFCompute>extracttrian_kernel,
            "_linalg_maketrian": <size_t><MXFCompute>maketrian_kernel}
