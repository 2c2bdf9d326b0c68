"""GPU compute of the linalg operators: cuBLAS / cuSOLVER by way of CuPy
(cupy.matmul, cupy.linalg, cupyx.scipy.linalg.solve_triangular), batched
over the leading axes, with the CPU kernels' conventions (row-major
triangles, gelqf's Householder signs through a QR of A^T, syevd's sign
rule, MXNet's gradient formulas).  Importing this module without CuPy
raises ImportError."""
import cupy


def compile_cases():
    """No kernel source of ours: cuBLAS and cuSOLVER do the work."""
    return []


def _t(x):
    return x.swapaxes(-1, -2)


def _store(out, value, req):
    if req == "add":
        out += value
    elif req != "null":
        out[...] = value


def _tri(x, lower):
    return cupy.tril(x) if lower else cupy.triu(x)


def _solve(a, b, lower, trans):
    """op(a)^-1 b for batches of triangular a (one cuSOLVER/cuBLAS call per
    matrix: CuPy's solve_triangular is not batched).  cupyx.scipy.linalg
    loads cuBLAS when imported, so it is imported here, not with the module
    (which test_gpu_sources imports on machines without CUDA libraries)."""
    from cupyx.scipy.linalg import solve_triangular
    shape = b.shape
    a2 = a.reshape((-1,) + a.shape[-2:])
    b2 = b.reshape((-1,) + shape[-2:])
    out = cupy.empty_like(b2)
    for i in range(b2.shape[0]):
        out[i] = solve_triangular(a2[i], b2[i], trans=1 if trans else 0, lower=lower)
    return out.reshape(shape)


def _mm(a, b, ta=False, tb=False):
    return cupy.matmul(_t(a) if ta else a, _t(b) if tb else b)


def _gemm_common(params, a, b):
    ax = params["axis"] % a.ndim
    a, b = cupy.moveaxis(a, ax, -2), cupy.moveaxis(b, ax, -2)
    return params["alpha"] * _mm(a, b, params["transpose_a"], params["transpose_b"]), ax


def gemm(params, inputs, outputs, reqs):
    prod, ax = _gemm_common(params, inputs[0], inputs[1])
    value = cupy.moveaxis(prod, -2, ax) + params["beta"] * inputs[2]
    _store(outputs[0], value, reqs[0])


def gemm2(params, inputs, outputs, reqs):
    prod, ax = _gemm_common(params, inputs[0], inputs[1])
    _store(outputs[0], cupy.moveaxis(prod, -2, ax), reqs[0])


def potrf(params, inputs, outputs, reqs):
    a = inputs[0]
    low = cupy.linalg.cholesky(a if params["lower"] else _t(a))
    _store(outputs[0], low if params["lower"] else _t(low), reqs[0])


def potri(params, inputs, outputs, reqs):
    a = inputs[0]
    low = a if params["lower"] else _t(a)
    eye = cupy.broadcast_to(cupy.eye(a.shape[-1], dtype=a.dtype), a.shape)
    linv = _solve(low, eye, True, False)
    _store(outputs[0], _mm(linv, linv, ta=True), reqs[0])


def _triangular(params, inputs, solve):
    a, b = inputs
    t, right, alpha = params["transpose"], params["rightside"], params["alpha"]
    if solve:
        if right:     # X op(A) = alpha B  <=>  op(A)^T X^T = alpha B^T
            return alpha * _t(_solve(a, _t(b), params["lower"], not t))
        return alpha * _solve(a, b, params["lower"], t)
    a = _tri(a, params["lower"])
    return alpha * (_mm(b, a, tb=t) if right else _mm(a, b, ta=t))


def trmm(params, inputs, outputs, reqs):
    _store(outputs[0], _triangular(params, inputs, False), reqs[0])


def trsm(params, inputs, outputs, reqs):
    _store(outputs[0], _triangular(params, inputs, True), reqs[0])


def syrk(params, inputs, outputs, reqs):
    a = inputs[0]
    t = params["transpose"]
    _store(outputs[0], params["alpha"] * _mm(a, a, ta=t, tb=not t), reqs[0])


def gelqf(params, inputs, outputs, reqs):
    """A = L Q through the QR factorization of A^T (Householder, as LAPACK)."""
    a = inputs[0]
    a2 = a.reshape((-1,) + a.shape[-2:])
    q = cupy.empty_like(a2)
    low = cupy.empty(a2.shape[:-1] + (a2.shape[-2],), a.dtype)
    for i in range(a2.shape[0]):
        qi, ri = cupy.linalg.qr(a2[i].T)
        q[i], low[i] = qi.T, ri.T
    _store(outputs[0], q.reshape(a.shape), reqs[0])
    _store(outputs[1], low.reshape(a.shape[:-1] + (a.shape[-2],)), reqs[1])


def syevd(params, inputs, outputs, reqs):
    lam, vec = cupy.linalg.eigh(inputs[0], UPLO="L")
    u = _t(vec)
    big = cupy.take_along_axis(u, cupy.abs(u).argmax(-1)[..., None], -1)
    u = cupy.where(big < 0, -u, u)
    _store(outputs[0], u, reqs[0])
    _store(outputs[1], lam, reqs[1])


def inverse(params, inputs, outputs, reqs):
    _store(outputs[0], cupy.linalg.inv(inputs[0]), reqs[0])


def _lu(a, lu_out, piv_out, reqs):
    """det's and slogdet's hidden outputs: LAPACK's LU factors and 1-based
    pivots of each matrix, row-major as the CPU keeps them (the factors of
    A^T read column-major, which is what cuSOLVER computes here)."""
    from cupyx.scipy.linalg import lu_factor
    a2 = a.reshape((-1,) + a.shape[-2:])
    lu, piv = cupy.empty_like(a2), cupy.empty(a2.shape[:-1], cupy.int32)
    for i in range(a2.shape[0]):
        f, p = lu_factor(a2[i].T)
        lu[i], piv[i] = f.T, p + 1
    _store(lu_out, lu.reshape(a.shape), reqs[0])
    _store(piv_out, piv.reshape(a.shape[:-1]), reqs[1])


def det(params, inputs, outputs, reqs):
    _store(outputs[0], cupy.linalg.det(inputs[0]), reqs[0])
    _lu(inputs[0], outputs[1], outputs[2], reqs[1:])


def slogdet(params, inputs, outputs, reqs):
    sign, logabs = cupy.linalg.slogdet(inputs[0])
    _store(outputs[0], sign, reqs[0])
    _store(outputs[1], logabs, reqs[1])
    _lu(inputs[0], outputs[2], outputs[3], reqs[2:])


def sumlogdiag(params, inputs, outputs, reqs):
    _store(outputs[0], cupy.log(cupy.diagonal(inputs[0], 0, -2, -1)).sum(-1), reqs[0])


def _tri_index(n, offset, lower):
    """(rows, cols) of the packed triangle in MXNet's order (the CPU's)."""
    d = abs(offset)
    lower = offset < 0 or (offset == 0 and lower)
    r, c = cupy.tril_indices(n - d)
    return (r + d, c) if lower else (c, r + d)


def extractdiag(params, inputs, outputs, reqs):
    _store(outputs[0], cupy.diagonal(inputs[0], params["offset"], -2, -1), reqs[0])


def makediag(params, inputs, outputs, reqs):
    out = cupy.zeros(outputs[0].shape, outputs[0].dtype)
    n, k = out.shape[-1], params["offset"]
    idx = cupy.arange(n - abs(k))
    rows, cols = (idx, idx + k) if k >= 0 else (idx - k, idx)
    out[..., rows, cols] = inputs[0]
    _store(outputs[0], out, reqs[0])


def extracttrian(params, inputs, outputs, reqs):
    rows, cols = _tri_index(inputs[0].shape[-1], params["offset"], params["lower"])
    _store(outputs[0], inputs[0][..., rows, cols], reqs[0])


def maketrian(params, inputs, outputs, reqs):
    out = cupy.zeros(outputs[0].shape, outputs[0].dtype)
    rows, cols = _tri_index(out.shape[-1], params["offset"], params["lower"])
    out[..., rows, cols] = inputs[0]
    _store(outputs[0], out, reqs[0])


# --- backward kernels (grad.py's _backward_linalg_*) ---------------------------------
def _copy_ltu(m):
    return cupy.tril(m) + _t(cupy.tril(m, -1))


def backward_potrf(params, inputs, outputs, reqs):
    g, low = inputs
    if not params["lower"]:
        g, low = _t(g), _t(low)
    w = _copy_ltu(_mm(low, g, ta=True))
    w = _solve(low, w, True, True)                       # L^-T W
    w = _t(_solve(low, _t(w), True, True))               # W L^-1
    _store(outputs[0], 0.5 * w, reqs[0])


def backward_potri(params, inputs, outputs, reqs):
    g, a, o = inputs
    m = -_mm(_mm(o, g + _t(g)), o)
    value = cupy.tril(_mm(m, a)) if params["lower"] else cupy.triu(_mm(a, m))
    _store(outputs[0], value, reqs[0])


def backward_gelqf(params, inputs, outputs, reqs):
    dq, dl, q, low = inputs
    m = _copy_ltu(_mm(low, dl, ta=True) - _mm(dq, q, tb=True))
    _store(outputs[0], _solve(low, dq + _mm(m, q), True, True), reqs[0])


def backward_syevd(params, inputs, outputs, reqs):
    du, dl, u, lam = inputs
    n = lam.shape[-1]
    gap = lam[..., None, :] - lam[..., :, None]
    gap = cupy.where(gap == 0, 1e-30 if lam.dtype == cupy.float64 else 1e-20, gap)
    m = _mm(u, du, tb=True) / gap
    eye = cupy.eye(n, dtype=bool)
    m = cupy.where(eye, dl[..., None, :] * cupy.ones_like(m), m)
    g = _mm(_mm(u, m, ta=True), u)
    _store(outputs[0], (g + _t(g)) / 2, reqs[0])


def _det_grad(scale, a):
    ok = scale != 0
    inv = cupy.linalg.inv(cupy.where(ok[..., None, None], a, cupy.eye(a.shape[-1], dtype=a.dtype)))
    return cupy.where(ok[..., None, None], scale[..., None, None] * _t(inv), 0)


def backward_det(params, inputs, outputs, reqs):
    g, a, d = inputs
    _store(outputs[0], _det_grad(g * d, a), reqs[0])


def backward_slogdet(params, inputs, outputs, reqs):
    g, a = inputs
    sign = cupy.linalg.slogdet(a)[0]
    _store(outputs[0], _det_grad(cupy.where(sign == 0, 0, g), a), reqs[0])


def backward_sumlogdiag(params, inputs, outputs, reqs):
    g, a = inputs
    n = a.shape[-1]
    value = cupy.eye(n, dtype=a.dtype) * (g[..., None] / cupy.diagonal(a, 0, -2, -1))[..., None, :]
    _store(outputs[0], value, reqs[0])
