"""The linalg operators (_linalg_*): forward against NumPy/SciPy for both
dtypes and batched shapes, MXNet 1.9.1's outputs and gradients
(data/linalg_mxnet191.npz, made by data/make_linalg_reference.py), finite
differences, reqs, errors."""
import json
import os

import numpy as np
import pytest

from mx_ops import infer_shapes, invoke, registry
from mx_ops.core.registry import MXNetError, ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient, numeric_gradient, symbolic_gradient

_DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "linalg_mxnet191.npz"))
_CASES = json.loads(str(_DATA["index"]))
rng = np.random.default_rng(7)
T = lambda x: np.swapaxes(x, -1, -2)   # noqa: E731


def _outs(r, op=None, params=None):
    """invoke's outputs as a list; with ``op``, the visible ones only (det's
    and slogdet's LU and pivots are hidden, as in MXNet)."""
    r = list(r) if isinstance(r, (list, tuple)) else [r]
    if op is None:
        return r
    node_op = registry.get(op)
    return r[:node_op.visible_output_count(node_op.parse_params(params))]


def spd(*shape):
    a = rng.standard_normal(shape)
    return a @ T(a) + shape[-1] * np.eye(shape[-1])


def lower(*shape):
    return np.tril(rng.standard_normal(shape)) + 3 * np.eye(shape[-1])


def sym(*shape):
    a = rng.standard_normal(shape)
    return a + T(a)


# --- MXNet 1.9.1's outputs and gradients -------------------------------------------
@pytest.mark.parametrize("case", sorted(_CASES))
def test_matches_mxnet(case):
    info = _CASES[case]
    op, params = "_linalg_" + info["op"], info["params"]
    ins = [_DATA[f"{case}/in{i}"] for i in range(info["nin"])]
    outs = _outs(invoke(op, ins, **params))
    for i in range(info["nout"]):
        np.testing.assert_allclose(outs[i], _DATA[f"{case}/out{i}"], rtol=1e-10, atol=1e-12,
                                   err_msg=f"{case}: output {i}")
    heads = [_DATA[f"{case}/g{i}"] for i in range(info["nout"])]
    grads = symbolic_gradient(op, ins, heads, **params)
    for i in range(info["nin"]):
        np.testing.assert_allclose(grads[i], _DATA[f"{case}/grad{i}"], rtol=1e-9, atol=1e-11,
                                   err_msg=f"{case}: gradient {i}")


# --- forward against NumPy, both dtypes, batched ------------------------------------
def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)


def _forward_cases():
    """(op, inputs, params, NumPy reference of the outputs)."""
    a, b, c = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 6, 5)), \
        rng.standard_normal((2, 3, 4, 6))
    s, l_, y = spd(3, 2, 5, 5), lower(3, 2, 5, 5), sym(2, 6, 6)
    w = rng.standard_normal((3, 5, 4))
    sq = rng.standard_normal((4, 5, 5)) + 4 * np.eye(5)
    v = rng.standard_normal((2, 10))
    return [
        ("gemm", [a, b, c], dict(transpose_b=True, alpha=0.5, beta=2.0),
         lambda: [0.5 * a @ T(b) + 2 * c]),
        ("gemm2", [T(a).copy(), b], dict(transpose_a=True, transpose_b=True),
         lambda: [a @ T(b)]),
        ("gemm2", [np.moveaxis(a, 2, 0).copy(), np.moveaxis(T(b), 2, 0).copy()], dict(axis=0),
         lambda: [np.moveaxis(a @ T(b), 2, 0)]),
        ("potrf", [s], {}, lambda: [np.linalg.cholesky(s)]),
        ("potrf", [s], dict(lower=False), lambda: [T(np.linalg.cholesky(s))]),
        ("potri", [l_], {}, lambda: [np.linalg.inv(l_ @ T(l_))]),
        ("trmm", [l_, rng.standard_normal((3, 2, 5, 4))], dict(alpha=2.0), None),
        ("trsm", [l_, rng.standard_normal((3, 2, 4, 5))], dict(rightside=True, transpose=True),
         None),
        ("syrk", [w], dict(alpha=3.0), lambda: [3 * w @ T(w)]),
        ("syrk", [w], dict(transpose=True), lambda: [T(w) @ w]),
        ("inverse", [sq], {}, lambda: [np.linalg.inv(sq)]),
        ("det", [sq], {}, lambda: [np.linalg.det(sq)]),
        ("slogdet", [sq], {}, lambda: list(np.linalg.slogdet(sq))),
        ("sumlogdiag", [s], {}, lambda: [np.log(np.diagonal(s, 0, -2, -1)).sum(-1)]),
        ("extractdiag", [sq], dict(offset=2), lambda: [np.diagonal(sq, 2, -2, -1)]),
        ("makediag", [v], dict(offset=-1),
         lambda: [np.stack([np.diag(x, -1) for x in v])]),
        ("extracttrian", [sq], dict(offset=1),
         lambda: [T(sq)[..., np.tril_indices(4)[0] + 1, np.tril_indices(4)[1]]]),
        ("maketrian", [v], dict(lower=True),
         lambda: [np.stack([_tril_from(x, 4) for x in v])]),
        ("syevd", [y], {}, None),
        ("gelqf", [rng.standard_normal((2, 3, 4, 6))], {}, None),
    ]


def _tril_from(x, n):
    m = np.zeros((n, n))
    m[np.tril_indices(n)] = x
    return m


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", range(len(_forward_cases())))
def test_forward_matches_numpy(dtype, k):
    op, ins, params, ref = _forward_cases()[k]
    ins = [x.astype(dtype) for x in ins]
    outs = _outs(invoke("_linalg_" + op, ins, **params), "_linalg_" + op, params)
    assert all(o.dtype == dtype for o in outs)
    x = [i.astype(np.float64) for i in ins]
    if op == "trmm":
        want = [2 * np.tril(x[0]) @ x[1]]
    elif op == "trsm":      # rightside, transpose: out A^T = B
        want = [x[1] @ np.linalg.inv(T(np.tril(x[0])))]
    elif op == "syevd":     # U A = diag(L) U, ascending L, the largest entry of each row > 0
        u, lam = (o.astype(np.float64) for o in outs)
        np.testing.assert_allclose(lam, np.linalg.eigvalsh(x[0]), **_tol(dtype))
        np.testing.assert_allclose(u @ x[0], lam[..., None] * u, **_tol(dtype))
        np.testing.assert_allclose(u @ T(u), np.broadcast_to(np.eye(6), u.shape), **_tol(dtype))
        assert (np.take_along_axis(u, np.abs(u).argmax(-1)[..., None], -1) > 0).all()
        return
    elif op == "gelqf":     # A = L Q, L lower, Q Q^T = I, L's diagonal as -/+ Householder
        q, lo = (o.astype(np.float64) for o in outs)
        np.testing.assert_allclose(lo @ q, x[0], **_tol(dtype))
        np.testing.assert_allclose(np.triu(lo, 1), 0)
        np.testing.assert_allclose(q @ T(q), np.broadcast_to(np.eye(4), lo.shape), **_tol(dtype))
        r = np.linalg.qr(T(x[0]))[1]        # LAPACK's Householder QR of A^T: R = L^T
        np.testing.assert_allclose(lo, T(r), **_tol(dtype))
        return
    else:
        want = ref()
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o.astype(np.float64), w, **_tol(dtype))


# --- finite differences -------------------------------------------------------------
_FD = [
    ("gemm", [(2, 3, 4), (2, 5, 4), (2, 3, 5)], dict(transpose_b=True, alpha=0.7, beta=-1.5)),
    ("gemm", [(4, 3), (4, 2), (3, 2)], dict(transpose_a=True)),
    ("gemm2", [(3, 2, 4), (4, 2, 5)], dict(axis=0, alpha=2.0)),
    ("gemm2", [(2, 4, 3), (2, 5, 4)], dict(transpose_a=True, transpose_b=True)),
    ("trmm", ["lower(2, 3, 3)", (2, 3, 4)], dict(alpha=1.5)),
    ("trmm", ["upper(3, 3)", (4, 3)], dict(lower=False, rightside=True, transpose=True)),
    ("trsm", ["lower(2, 3, 3)", (2, 3, 4)], dict(alpha=-0.5, transpose=True)),
    ("trsm", ["upper(3, 3)", (4, 3)], dict(lower=False, rightside=True)),
    ("syrk", [(2, 3, 4)], dict(alpha=0.5)),
    ("syrk", [(3, 4)], dict(transpose=True)),
    ("potri", ["lower(2, 3, 3)"], {}),
    ("potri", ["upper(3, 3)"], dict(lower=False)),
    ("gelqf", [(2, 3, 4)], {}),
    ("inverse", ["well(2, 3, 3)"], {}),
    ("det", ["well(2, 3, 3)"], {}),
    ("slogdet", ["well(3, 3)"], {}),
    ("sumlogdiag", ["spd(2, 3, 3)"], {}),
    ("extractdiag", [(2, 4, 4)], dict(offset=1)),
    ("makediag", [(2, 3)], dict(offset=-2)),
    ("extracttrian", [(2, 4, 4)], dict(lower=False)),
    ("maketrian", [(2, 6)], dict(offset=1)),
]


def _make(spec):
    if not isinstance(spec, str):
        return rng.standard_normal(spec)
    kind, shape = spec.split("(")
    shape = tuple(int(s) for s in shape.rstrip(")").split(","))
    return {"lower": lambda: lower(*shape), "upper": lambda: T(lower(*shape)),
            "spd": lambda: spd(*shape),
            "well": lambda: rng.standard_normal(shape) + 3 * np.eye(shape[-1])}[kind]()


@pytest.mark.parametrize("k", range(len(_FD)))
def test_gradient_finite_differences(k):
    op, specs, params = _FD[k]
    check_numeric_gradient("_linalg_" + op, [_make(s) for s in specs], rtol=1e-5, atol=1e-7,
                           **params)


@pytest.mark.parametrize("op,make,params", [("potrf", spd, {}), ("potrf", spd, {"lower": False}),
                                            ("syevd", sym, {})])
def test_symmetric_input_gradient_finite_differences(op, make, params):
    """potrf and syevd read one triangle of their symmetric input and give
    MXNet's symmetric gradient G: a perturbation of entry (i, j) of the read
    triangle moves both (i, j) and (j, i) of the matrix, so the finite
    differences are G + G^T on that triangle's off-diagonal entries, G on
    the diagonal and 0 on the other triangle."""
    a = make(2, 4, 4)
    outs = _outs(invoke("_linalg_" + op, [a], **params))
    heads = [rng.standard_normal(o.shape) for o in outs]
    got = symbolic_gradient("_linalg_" + op, [a], heads, **params)[0]
    want = numeric_gradient("_linalg_" + op, [a], heads, **params)[0]
    tri = np.tril if params.get("lower", True) else np.triu
    np.testing.assert_allclose(got, T(got), atol=1e-12)
    np.testing.assert_allclose(tri(2 * got) - got * np.eye(4), want, rtol=1e-5, atol=1e-6)


# --- reqs, dtypes, errors, shapes ----------------------------------------------------
@pytest.mark.parametrize("op,ins,params", [
    ("gemm2", [(2, 3, 4), (2, 4, 5)], {}),
    ("syevd", ["sym"], {}),
    ("gelqf", [(3, 5)], {}),
    ("maketrian", [(2, 6)], {"offset": -1}),
])
def test_req_add(op, ins, params):
    ins = [sym(3, 3) if s == "sym" else rng.standard_normal(s) for s in ins]
    outs = _outs(invoke("_linalg_" + op, ins, **params))
    base = [rng.standard_normal(o.shape) for o in outs]
    acc = [b.copy() for b in base]
    invoke("_linalg_" + op, ins, out=acc if len(acc) > 1 else acc[0], req="add", **params)
    for a, b, o in zip(acc, base, outs):
        np.testing.assert_allclose(a, b + o, rtol=1e-12, atol=1e-12)


def test_only_float32_float64():
    with pytest.raises(TypeInferenceError, match="32-bit and 64-bit"):
        invoke("_linalg_inverse", [np.eye(3, dtype="float16")])
    with pytest.raises(TypeInferenceError):
        invoke("_linalg_gemm2", [np.eye(2, dtype="float32"), np.eye(2)])


@pytest.mark.parametrize("op,shapes,params,text", [
    ("gemm2", [(2, 3), (4, 5)], {}, "inner dimensions"),
    ("gemm", [(2, 3), (3, 5), (2, 4)], {}, "'C'"),
    ("potrf", [(2, 3)], {}, "square"),
    ("trsm", [(3, 3), (4, 3)], {}, "do not fit"),
    ("gelqf", [(4, 3)], {}, "no more rows"),
    ("maketrian", [(5,)], {}, "triangle"),
    ("det", [(3,)], {}, "at least 2"),
])
def test_shape_errors(op, shapes, params, text):
    with pytest.raises(ShapeError, match=text):
        infer_shapes("_linalg_" + op, params, shapes)


def test_shapes_follow_mxnet():
    assert infer_shapes("_linalg_gemm2", {"axis": 0}, [(3, 2, 4), (4, 2, 5)])[1] == [(3, 2, 5)]
    assert infer_shapes("_linalg_syevd", {}, [(2, 4, 4)])[1] == [(2, 4, 4), (2, 4)]
    assert infer_shapes("_linalg_gelqf", {}, [(3, 5)])[1] == [(3, 5), (3, 3)]
    assert infer_shapes("_linalg_slogdet", {}, [(2, 3, 3)])[1][:2] == [(2,), (2,)]
    assert infer_shapes("_linalg_maketrian", {"offset": 2}, [(3,)])[1] == [(4, 4)]
    assert infer_shapes("_linalg_extracttrian", {"offset": -1}, [(4, 4)])[1] == [(6,)]
    assert infer_shapes("_linalg_makediag", {"offset": 1}, [(2, 3)])[1] == [(2, 4, 4)]


def test_singular_and_indefinite_inputs():
    with pytest.raises(MXNetError, match="not positive definite"):
        invoke("_linalg_potrf", [np.array([[1.0, 2.0], [2.0, 1.0]])])
    with pytest.raises(MXNetError, match="non-invertible"):
        invoke("_linalg_inverse", [np.array([[1.0, 2.0], [2.0, 4.0]])])
    s = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 3.0], [1.0, 4.0]]])
    assert invoke("_linalg_det", [s])[0][0] == 0
    sign, logabs = invoke("_linalg_slogdet", [s])[:2]
    assert sign[0] == 0 and logabs[0] == -np.inf and sign[1] == 1
    grad = symbolic_gradient("_linalg_det", [s], [np.ones(2)])[0]
    assert (grad[0] == 0).all()          # MXNet: no gradient for a singular matrix


def test_det_keeps_lu_and_pivots_hidden():
    """det's symbol has MXNet's three outputs (det, LU, pivot), one visible."""
    a = rng.standard_normal((2, 4, 4))
    d, lu, piv = invoke("_linalg_det", [a])
    assert lu.shape == (2, 4, 4) and piv.dtype == np.int32 and piv.shape == (2, 4)
    for k in range(2):       # P^T (L U) reproduces A (row-major: the factors of A^T)
        low, up = np.tril(T(lu[k]), -1) + np.eye(4), np.triu(T(lu[k]))
        m = low @ up
        for j in reversed(range(4)):
            m[[j, piv[k, j] - 1]] = m[[piv[k, j] - 1, j]]
        np.testing.assert_allclose(T(m), a[k], atol=1e-12)
    assert infer_shapes("_linalg_det", {}, [(2, 4, 4)])[1] == [(2,), (2, 4, 4), (2, 4)]


def test_large_batch_splits_like_serial():
    """A batch large enough for several workers gives each matrix's result."""
    a = spd(4096, 6, 6)
    got = invoke("_linalg_potrf", [a])
    np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(invoke("_linalg_inverse", [a]), np.linalg.inv(a), rtol=1e-8)


def _split_and_serial(run):
    """run() on one thread and on two (kernel_threads: the pool's
    max-threads for this thread), with the pool's job count before and
    after the two-thread run."""
    from mx_ops.core._pool import stats
    from mx_ops.test_utils import kernel_threads
    with kernel_threads(1):
        serial = run()
    jobs = stats()["jobs"]
    with kernel_threads(2):
        split = run()
    return serial, split, stats()["jobs"] - jobs


_B, _N = 8192, 16           # batch * n reaches the pool's cut for the cheapest kernels


def _split_cases(dtype):
    a = rng.standard_normal((_B, _N, _N)).astype(dtype)
    low = lower(_B, _N, _N).astype(dtype)
    return [("_linalg_potrf", [spd(_B, _N, _N).astype(dtype)], {}),
            ("_linalg_potri", [low], {"lower": False}),
            ("_linalg_trmm", [low, a], {"rightside": True, "alpha": 0.5}),
            ("_linalg_trsm", [low, a], {"transpose": True}),
            ("_linalg_syrk", [a], {"alpha": 2.0}),
            ("_linalg_gelqf", [a[:, :8]], {}),
            ("_linalg_syevd", [sym(_B, _N, _N).astype(dtype)], {}),
            ("_linalg_inverse", [a], {}),
            ("_linalg_det", [a], {}),
            ("_linalg_slogdet", [a], {}),
            ("_linalg_sumlogdiag", [spd(_B, _N, _N).astype(dtype)], {}),
            ("_linalg_extractdiag", [a], {"offset": -2}),
            ("_linalg_makediag", [a[:, 0]], {"offset": 3}),
            ("_linalg_extracttrian", [a], {"offset": 1}),
            ("_linalg_maketrian", [a.reshape(_B, -1)[:, :136]], {"lower": False})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_split_across_the_pool_gives_the_serial_bits(dtype):
    """Every batched kernel gives the same bits when its batch is split over
    the pool's threads as on one thread, and does split (the pool ran a job)."""
    from mx_ops.test_utils import same_outcome
    for op, ins, params in _split_cases(dtype):
        serial, split, jobs = _split_and_serial(lambda: _outs(invoke(op, ins, **params)))
        assert same_outcome(serial, split), op
        assert jobs > 0, f"{op}: the batch was not split"


@pytest.mark.parametrize("op, ins, params", [
    ("_linalg_potrf", lambda: [spd(_B, _N, _N)], {}),
    ("_linalg_potri", lambda: [lower(_B, _N, _N)], {}),
    ("_linalg_gelqf", lambda: [rng.standard_normal((_B, 8, _N))], {}),
    ("_linalg_syevd", lambda: [sym(_B, _N, _N)], {}),
    ("_linalg_det", lambda: [rng.standard_normal((_B, _N, _N))], {}),
    ("_linalg_slogdet", lambda: [rng.standard_normal((_B, _N, _N))], {}),
    ("_linalg_sumlogdiag", lambda: [spd(_B, _N, _N)], {}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_backward_split_across_the_pool_gives_the_serial_bits(op, ins, params):
    """The backward kernels (_linalg_grad_cpu) likewise."""
    from mx_ops.test_utils import same_outcome
    ins = ins()
    outs = _outs(invoke(op, ins, **params))
    ograds = [rng.standard_normal(o.shape) for o in outs]
    serial, split, jobs = _split_and_serial(
        lambda: symbolic_gradient(op, ins, ograds, **params))
    assert same_outcome(serial, split)
    assert jobs > 0


def _scipy_blas_threads():
    """The thread count of the OpenBLAS behind scipy's cython_blas, or None."""
    import ctypes
    import glob
    import scipy
    libs = glob.glob(os.path.join(os.path.dirname(scipy.__path__[0]), "scipy.libs",
                                  "libscipy_openblas*.so"))
    if not libs:
        return None
    return ctypes.CDLL(libs[0]).scipy_openblas_get_num_threads()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batches_of_large_matrices_split_with_one_blas_thread(threads, dtype):
    """Matrices large enough for the BLAS's own threads (128^3 flops and up)
    are split across the workers with the BLAS held at one thread
    (blas_threads.h): every matrix's factor and inverses, the BLAS's count
    given back afterwards, after a failing matrix too."""
    from mx_ops.ops.linalg._linalg_cpu import blas_threads_held
    from mx_ops.test_utils import kernel_threads
    before = _scipy_blas_threads()
    if before is not None:
        assert blas_threads_held()
    a = spd(5, 128, 128).astype(dtype)
    rtol = 1e-4 if dtype == "float32" else 1e-10
    with kernel_threads(threads):
        chol = invoke("_linalg_potrf", [a])
        inv = invoke("_linalg_potri", [chol])
        general = invoke("_linalg_inverse", [a])
        bad = a.copy()
        bad[3] = -np.eye(128, dtype=dtype)
        with pytest.raises(MXNetError, match="not positive definite"):
            invoke("_linalg_potrf", [bad])
    want = np.linalg.cholesky(a.astype(np.float64))
    np.testing.assert_allclose(chol, want, rtol=rtol, atol=rtol * 10)
    np.testing.assert_allclose(inv, np.linalg.inv(a.astype(np.float64)), rtol=rtol * 100,
                               atol=rtol)
    np.testing.assert_allclose(general, np.linalg.inv(a.astype(np.float64)), rtol=rtol * 100,
                               atol=rtol)
    assert _scipy_blas_threads() == before
