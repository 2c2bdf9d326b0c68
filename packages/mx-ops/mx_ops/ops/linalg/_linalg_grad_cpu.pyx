"""The backward kernels of the linalg operators whose gradients are not
compositions of forward linalg operators (grad.py): potrf, potri, gelqf,
syevd, det/slogdet, sumlogdiag.  MXNet 1.9.1's formulas, per matrix, with
the BLAS/LAPACK helpers of _linalg_blas.pxi, batches split across workers."""
include "_linalg_blas.pxi"
include "_linalg_param.pxi"


cdef inline int _n(const MXTBlob* b) noexcept nogil:
    return <int>b.shape[b.ndim - 1]


# --- potrf: dA = 0.5 L^-T copyLTU(L^T dL) L^-1 (lower; upper through L = U^T) -------
cdef int _potrf_bw_t(MXOpCall* c, real* dA) noexcept nogil:
    cdef const LinalgParam* p = <const LinalgParam*>c.params
    cdef const real* g = <const real*>c.inputs[0].dptr
    cdef const real* L = <const real*>c.inputs[1].dptr
    cdef int n = _n(&c.inputs[1]), r, j
    cdef int64_t i, batch = _lead(&c.inputs[1], 2)
    cdef bint lo = p.lower
    for i in prange(batch, nogil=True, num_threads=_threads(batch, <int64_t>n * n * n)):
        for r in range(n):                      # W = dL (lower) or dU^T (upper)
            for j in range(n):
                dA[i * n * n + r * n + j] = g[i * n * n + (r * n + j if lo else j * n + r)]
        trmm_rm(False, lo, lo, n, n, 1, L + i * n * n, n, dA + i * n * n, n)   # L^T W
        copy_lower_to_upper(dA + i * n * n, n)
        trsm_rm(False, lo, lo, n, n, 1, L + i * n * n, n, dA + i * n * n, n)   # L^-T .
        trsm_rm(True, lo, not lo, n, n, 0.5, L + i * n * n, n, dA + i * n * n, n)  # . L^-1
    return 0


# --- potri: dL = -tril(O (g + g^T) O L) (lower); upper: dU = -triu(U O (g + g^T) O) -----
cdef int _potri_bw_t(MXOpCall* c, real* dA) noexcept nogil:
    cdef const LinalgParam* p = <const LinalgParam*>c.params
    cdef const real* g = <const real*>c.inputs[0].dptr
    cdef const real* A = <const real*>c.inputs[1].dptr
    cdef const real* O = <const real*>c.inputs[2].dptr
    cdef int n = _n(&c.inputs[1]), r, j
    cdef int64_t i, k, batch = _lead(&c.inputs[1], 2)
    cdef real* t
    cdef int failed = 0
    for i in prange(batch, nogil=True, num_threads=_threads(batch, <int64_t>n * n * n)):
        k = i * n * n
        t = <real*>malloc(max(2 * n * n, 1) * sizeof(real))
        if t == NULL:
            failed += 1
            continue
        for r in range(n):                                          # S = g + g^T
            for j in range(n):
                t[r * n + j] = g[k + r * n + j] + g[k + j * n + r]
        gemm_rm(False, False, n, n, n, 1, O + k, n, t, n, 0, t + n * n, n)   # O S
        gemm_rm(False, False, n, n, n, -1, t + n * n, n, O + k, n, 0, dA + k, n)  # -O S O
        trmm_rm(p.lower, p.lower, False, n, n, 1, A + k, n, dA + k, n)  # . L, or U .
        zero_triangle(dA + k, n, p.lower)
        free(t)
    if failed:
        c.error = "potri backward: out of memory"
        return -1
    return 0


# --- gelqf: M = L^T dL - dQ Q^T; dA = L^-T (dQ + copyLTU(M) Q) -------------------------
cdef int _gelqf_bw_t(MXOpCall* c, real* dA) noexcept nogil:
    cdef const real* dQ = <const real*>c.inputs[0].dptr
    cdef const real* dL = <const real*>c.inputs[1].dptr
    cdef const real* Q = <const real*>c.inputs[2].dptr
    cdef const real* L = <const real*>c.inputs[3].dptr
    cdef int m = <int>c.inputs[2].shape[c.inputs[2].ndim - 2], n = _n(&c.inputs[2])
    cdef int64_t i, batch = _lead(&c.inputs[2], 2)
    cdef real* M
    cdef int failed = 0
    for i in prange(batch, nogil=True, num_threads=_threads(batch, <int64_t>m * m * n)):
        M = <real*>malloc(max(m * m, 1) * sizeof(real))
        if M == NULL:
            failed += 1
            continue
        gemm_rm(True, False, m, m, m, 1, L + i * m * m, m, dL + i * m * m, m, 0, M, m)
        gemm_rm(False, True, m, m, n, -1, dQ + i * m * n, n, Q + i * m * n, n, 1, M, m)
        copy_lower_to_upper(M, m)
        memcpy(dA + i * m * n, dQ + i * m * n, m * n * sizeof(real))
        gemm_rm(False, False, m, n, m, 1, M, m, Q + i * m * n, n, 1, dA + i * m * n, n)
        trsm_rm(False, True, True, m, n, 1, L + i * m * m, m, dA + i * m * n, n)
        free(M)
    if failed:
        c.error = "gelqf backward: out of memory"
        return -1
    return 0


# --- syevd: dA = sym(U^T (diag(dL) + F o (U dU^T)) U), F_ij = 1 / (L_j - L_i) ----------
cdef int _syevd_bw_t(MXOpCall* c, real* dA) noexcept nogil:
    cdef const real* dU = <const real*>c.inputs[0].dptr
    cdef const real* dl = <const real*>c.inputs[1].dptr
    cdef const real* U = <const real*>c.inputs[2].dptr
    cdef const real* lam = <const real*>c.inputs[3].dptr
    cdef int n = _n(&c.inputs[2]), r, j
    cdef int64_t i, k, batch = _lead(&c.inputs[2], 2)
    cdef real* t
    cdef real gap, tiny = 1e-30 if real is double else 1e-20
    cdef int failed = 0
    for i in prange(batch, nogil=True, num_threads=_threads(batch, <int64_t>n * n * n)):
        k = i * n * n
        t = <real*>malloc(max(2 * n * n, 1) * sizeof(real))
        if t == NULL:
            failed += 1
            continue
        gemm_rm(False, True, n, n, n, 1, U + k, n, dU + k, n, 0, t, n)      # U dU^T
        for r in range(n):
            for j in range(n):
                if r == j:
                    t[r * n + j] = dl[i * n + r]
                else:   # equal eigenvalues have no derivative: keep it finite
                    gap = lam[i * n + j] - lam[i * n + r]
                    if fabs(gap) < tiny:
                        gap = tiny if gap >= 0 else -tiny
                    t[r * n + j] = t[r * n + j] / gap
        gemm_rm(False, False, n, n, n, 1, t, n, U + k, n, 0, t + n * n, n)  # M U
        gemm_rm(True, False, n, n, n, 1, U + k, n, t + n * n, n, 0, t, n)   # U^T M U
        for r in range(n):
            for j in range(n):
                dA[k + r * n + j] = (t[r * n + j] + t[j * n + r]) / 2
        free(t)
    if failed:
        c.error = "syevd backward: out of memory"
        return -1
    return 0


# --- det / slogdet: dA = s inv(A)^T, s = g det (det) or g (slogdet's log|det|) ---------
cdef int _det_bw_t(MXOpCall* c, real* dA) noexcept nogil:
    """No gradient (zeros) for a singular matrix, as in MXNet."""
    cdef const real* g = <const real*>c.inputs[0].dptr
    cdef const real* A = <const real*>c.inputs[1].dptr
    cdef const real* det = <const real*>c.inputs[2].dptr if c.nin == 3 else NULL
    cdef int n = _n(&c.inputs[1]), lwork = max(n, 1) * 64, r, j
    cdef int64_t i, k, batch = _lead(&c.inputs[1], 2)
    cdef real* t
    cdef real s
    cdef int failed = 0
    for i in prange(batch, nogil=True, num_threads=_threads(batch, <int64_t>n * n * n)):
        k = i * n * n
        t = <real*>malloc(max(n * n + lwork, 1) * sizeof(real) + n * sizeof(int))
        if t == NULL:
            failed += 1
            continue
        memcpy(t, A + k, n * n * sizeof(real))
        s = g[i] * (det[i] if det != NULL else 1)
        if lu_inverse(t, n, <int*>(t + n * n + lwork), t + n * n, lwork) != 0:
            s = 0
        for r in range(n):
            for j in range(n):
                dA[k + r * n + j] = s * t[j * n + r] if s != 0 else 0
        free(t)
    if failed:
        c.error = "det backward: out of memory"
        return -1
    return 0


# --- sumlogdiag: dA = diag(g / diag(A)) ------------------------------------------------
cdef int _sumlogdiag_bw_t(MXOpCall* c, real* dA) noexcept nogil:
    cdef const real* g = <const real*>c.inputs[0].dptr
    cdef const real* A = <const real*>c.inputs[1].dptr
    cdef int n = _n(&c.inputs[1]), j
    cdef int64_t i, batch = _lead(&c.inputs[1], 2)
    memset(dA, 0, batch * n * n * sizeof(real))
    for i in prange(batch, nogil=True, num_threads=_threads(batch, <int64_t>n)):
        for j in range(n):
            dA[i * n * n + j * n + j] = g[i] / A[i * n * n + j * n + j]
    return 0


cdef int _potrf_bw_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _potrf_bw_t[float], _potrf_bw_t[double])


cdef int _potri_bw_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _potri_bw_t[float], _potri_bw_t[double])


cdef int _gelqf_bw_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _gelqf_bw_t[float], _gelqf_bw_t[double])


cdef int _syevd_bw_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _syevd_bw_t[float], _syevd_bw_t[double])


cdef int _det_bw_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _det_bw_t[float], _det_bw_t[double])


cdef int _sumlogdiag_bw_body(MXOpCall* c) noexcept nogil:
    return by_dtype(c, _sumlogdiag_bw_t[float], _sumlogdiag_bw_t[double])


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
