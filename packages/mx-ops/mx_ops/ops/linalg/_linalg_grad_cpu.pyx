"""The backward kernels of the linalg operators whose gradients are not
compositions of forward linalg operators (grad.py): potrf, potri, gelqf,
syevd, det/slogdet, sumlogdiag.  MXNet 1.9.1's formulas, per matrix, with
the BLAS/LAPACK helpers of _linalg_blas.pxi, batches split across the
process-wide thread pool (split_batch)."""
include "_linalg_blas.pxi"
include "_linalg_param.pxi"


cdef inline int _n(const MXTBlob* b) noexcept nogil:
    return <int>b.shape[b.ndim - 1]


cdef int _per_matrix(MXOpCall* c, int k, int64_t cost, item_f f, item_d d,
                     const char* error) noexcept nogil:
    """A backward kernel's body: its per-matrix function (f or d, by the
    dtype) over the batch of input k's matrices, `cost` flops each, writing
    output 0; `error` when one failed (out of memory for its scratch)."""
    cdef int64_t batch = _lead(&c.inputs[k], 2), failed
    cdef int nt = _threads(batch, cost)
    if c.outputs[0].dtype == MX_FLOAT64:
        failed = split_batch(c, <double*>c.outputs[0].dptr, batch, nt, f, d)
    else:
        failed = split_batch(c, <float*>c.outputs[0].dptr, batch, nt, f, d)
    if failed:
        c.error = error
        return -1
    return 0


# --- potrf: dA = 0.5 L^-T copyLTU(L^T dL) L^-1 (lower; upper through L = U^T) -------
cdef int _potrf_bw_item(const Batch* b, real* dA, int64_t i) noexcept nogil:
    cdef bint lo = (<const LinalgParam*>b.c.params).lower
    cdef int n = _n(&b.c.inputs[1]), r, j
    cdef int64_t k = i * n * n
    cdef const real* g = <const real*>b.c.inputs[0].dptr + k
    cdef const real* L = <const real*>b.c.inputs[1].dptr + k
    dA += k
    for r in range(n):                      # W = dL (lower) or dU^T (upper)
        for j in range(n):
            dA[r * n + j] = g[r * n + j if lo else j * n + r]
    trmm_rm(False, lo, lo, n, n, 1, L, n, dA, n)             # L^T W
    copy_lower_to_upper(dA, n)
    trsm_rm(False, lo, lo, n, n, 1, L, n, dA, n)             # L^-T .
    trsm_rm(True, lo, not lo, n, n, 0.5, L, n, dA, n)        # . L^-1
    return 0


# --- potri: dL = -tril(O (g + g^T) O L) (lower); upper: dU = -triu(U O (g + g^T) O) -----
cdef int _potri_bw_item(const Batch* b, real* dA, int64_t i) noexcept nogil:
    cdef bint lo = (<const LinalgParam*>b.c.params).lower
    cdef int n = _n(&b.c.inputs[1]), r, j
    cdef int64_t k = i * n * n
    cdef const real* g = <const real*>b.c.inputs[0].dptr + k
    cdef const real* A = <const real*>b.c.inputs[1].dptr + k
    cdef const real* O = <const real*>b.c.inputs[2].dptr + k
    cdef real* t = <real*>malloc(max(2 * n * n, 1) * sizeof(real))
    if t == NULL:
        return -1
    dA += k
    for r in range(n):                                          # S = g + g^T
        for j in range(n):
            t[r * n + j] = g[r * n + j] + g[j * n + r]
    gemm_rm(False, False, n, n, n, 1, O, n, t, n, 0, t + n * n, n)      # O S
    gemm_rm(False, False, n, n, n, -1, t + n * n, n, O, n, 0, dA, n)    # -O S O
    trmm_rm(lo, lo, False, n, n, 1, A, n, dA, n)                        # . L, or U .
    zero_triangle(dA, n, lo)
    free(t)
    return 0


# --- gelqf: M = L^T dL - dQ Q^T; dA = L^-T (dQ + copyLTU(M) Q) -------------------------
cdef int _gelqf_bw_item(const Batch* b, real* dA, int64_t i) noexcept nogil:
    cdef int m = <int>b.c.inputs[2].shape[b.c.inputs[2].ndim - 2], n = _n(&b.c.inputs[2])
    cdef const real* dQ = <const real*>b.c.inputs[0].dptr + i * m * n
    cdef const real* dL = <const real*>b.c.inputs[1].dptr + i * m * m
    cdef const real* Q = <const real*>b.c.inputs[2].dptr + i * m * n
    cdef const real* L = <const real*>b.c.inputs[3].dptr + i * m * m
    cdef real* M = <real*>malloc(max(m * m, 1) * sizeof(real))
    if M == NULL:
        return -1
    dA += i * m * n
    gemm_rm(True, False, m, m, m, 1, L, m, dL, m, 0, M, m)
    gemm_rm(False, True, m, m, n, -1, dQ, n, Q, n, 1, M, m)
    copy_lower_to_upper(M, m)
    memcpy(dA, dQ, m * n * sizeof(real))
    gemm_rm(False, False, m, n, m, 1, M, m, Q, n, 1, dA, n)
    trsm_rm(False, True, True, m, n, 1, L, m, dA, n)
    free(M)
    return 0


# --- syevd: dA = sym(U^T (diag(dL) + F o (U dU^T)) U), F_ij = 1 / (L_j - L_i) ----------
cdef int _syevd_bw_item(const Batch* b, real* dA, int64_t i) noexcept nogil:
    cdef int n = _n(&b.c.inputs[2]), r, j
    cdef int64_t k = i * n * n
    cdef const real* dU = <const real*>b.c.inputs[0].dptr + k
    cdef const real* dl = <const real*>b.c.inputs[1].dptr + i * n
    cdef const real* U = <const real*>b.c.inputs[2].dptr + k
    cdef const real* lam = <const real*>b.c.inputs[3].dptr + i * n
    cdef real gap, tiny = 1e-30 if real is double else 1e-20
    cdef real* t = <real*>malloc(max(2 * n * n, 1) * sizeof(real))
    if t == NULL:
        return -1
    dA += k
    gemm_rm(False, True, n, n, n, 1, U, n, dU, n, 0, t, n)      # U dU^T
    for r in range(n):
        for j in range(n):
            if r == j:
                t[r * n + j] = dl[r]
            else:   # equal eigenvalues have no derivative: keep it finite
                gap = lam[j] - lam[r]
                if fabs(gap) < tiny:
                    gap = tiny if gap >= 0 else -tiny
                t[r * n + j] = t[r * n + j] / gap
    gemm_rm(False, False, n, n, n, 1, t, n, U, n, 0, t + n * n, n)  # M U
    gemm_rm(True, False, n, n, n, 1, U, n, t + n * n, n, 0, t, n)   # U^T M U
    for r in range(n):
        for j in range(n):
            dA[r * n + j] = (t[r * n + j] + t[j * n + r]) / 2
    free(t)
    return 0


# --- det / slogdet: dA = s inv(A)^T, s = g det (det) or g (slogdet's log|det|) ---------
cdef int _det_bw_item(const Batch* b, real* dA, int64_t i) noexcept nogil:
    cdef const real* g = <const real*>b.c.inputs[0].dptr
    cdef const real* det = <const real*>b.c.inputs[2].dptr if b.c.nin == 3 else NULL
    cdef int n = _n(&b.c.inputs[1]), lwork = max(n, 1) * 64, r, j
    cdef int64_t k = i * n * n
    cdef real s = g[i] * (det[i] if det != NULL else 1)
    cdef real* t = <real*>malloc(max(n * n + lwork, 1) * sizeof(real) + n * sizeof(int))
    if t == NULL:
        return -1
    dA += k
    memcpy(t, <const real*>b.c.inputs[1].dptr + k, n * n * sizeof(real))
    if lu_inverse(t, n, <int*>(t + n * n + lwork), t + n * n, lwork) != 0:
        s = 0
    for r in range(n):
        for j in range(n):
            dA[r * n + j] = s * t[j * n + r] if s != 0 else 0
    free(t)
    return 0


# --- sumlogdiag: dA = diag(g / diag(A)) ------------------------------------------------
cdef int _sumlogdiag_bw_item(const Batch* b, real* dA, int64_t i) noexcept nogil:
    cdef const real* g = <const real*>b.c.inputs[0].dptr
    cdef const real* A = <const real*>b.c.inputs[1].dptr
    cdef int n = _n(&b.c.inputs[1]), j
    for j in range(n):
        dA[i * n * n + j * n + j] = g[i] / A[i * n * n + j * n + j]
    return 0


cdef int _potrf_bw_body(MXOpCall* c) noexcept nogil:
    cdef int64_t n = _n(&c.inputs[1])
    return _per_matrix(c, 1, n * n * n, _potrf_bw_item[float], _potrf_bw_item[double], "")


cdef int _potri_bw_body(MXOpCall* c) noexcept nogil:
    cdef int64_t n = _n(&c.inputs[1])
    return _per_matrix(c, 1, n * n * n, _potri_bw_item[float], _potri_bw_item[double],
                       "potri backward: out of memory")


cdef int _gelqf_bw_body(MXOpCall* c) noexcept nogil:
    cdef int64_t m = c.inputs[2].shape[c.inputs[2].ndim - 2], n = _n(&c.inputs[2])
    return _per_matrix(c, 2, m * m * n, _gelqf_bw_item[float], _gelqf_bw_item[double],
                       "gelqf backward: out of memory")


cdef int _syevd_bw_body(MXOpCall* c) noexcept nogil:
    cdef int64_t n = _n(&c.inputs[2])
    return _per_matrix(c, 2, n * n * n, _syevd_bw_item[float], _syevd_bw_item[double],
                       "syevd backward: out of memory")


cdef int _det_bw_body(MXOpCall* c) noexcept nogil:
    """No gradient (zeros) for a singular matrix, as in MXNet."""
    cdef int64_t n = _n(&c.inputs[1])
    return _per_matrix(c, 1, n * n * n, _det_bw_item[float], _det_bw_item[double],
                       "det backward: out of memory")


cdef int _sumlogdiag_bw_body(MXOpCall* c) noexcept nogil:
    memset(c.outputs[0].dptr, 0,
           mx_tblob_size(&c.outputs[0]) * (8 if c.outputs[0].dtype == MX_FLOAT64 else 4))
    return _per_matrix(c, 1, _n(&c.inputs[1]), _sumlogdiag_bw_item[float],
                       _sumlogdiag_bw_item[double], "")


cdef int potrf_bw_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _potrf_bw_body)

cdef int potri_bw_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _potri_bw_body)

cdef int gelqf_bw_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _gelqf_bw_body)

cdef int syevd_bw_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _syevd_bw_body)

cdef int det_bw_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _det_bw_body)

cdef int sumlogdiag_bw_kernel(MXOpCall* c) noexcept nogil:
    return with_reqs(c, _sumlogdiag_bw_body)

def kernels():
    """{backward operator name: MXFCompute address}; slogdet shares det's."""
    return {"_backward_linalg_potrf": <size_t><MXFCompute>potrf_bw_kernel,
            "_backward_linalg_potri": <size_t><MXFCompute>potri_bw_kernel,
            "_backward_linalg_gelqf": <size_t><MXFCompute>gelqf_bw_kernel,
            "_backward_linalg_syevd": <size_t><MXFCompute>syevd_bw_kernel,
            "_backward_linalg_det": <size_t><MXFCompute>det_bw_kernel,
            "_backward_linalg_sumlogdiag": <size_t><MXFCompute>sumlogdiag_bw_kernel,
            "_backward_linalg_slogdet": <size_t><MXFCompute>det_bw_kernel}
