"""dot's sparse kernels on a GPU (the CuPy twin, _dot_sparse_gpu.py)
against the CPU ones: every combination with a sparse kernel, float32 and
float64, empty rows and empty matrices, and _backward_dot's row_sparse
gradient.  Skipped without CuPy and a CUDA device."""
import numpy as np
import pytest
import scipy.sparse as sp

from mx_ops.core import registry
from mx_ops.core.stype import DISPATCH_COMPUTE_EX, SparseBlob
from mx_ops.ops.dot.dot_sparse import backward_dot_storage, dot_storage
from mx_ops.ops.sparse import _sparse_cpu

pytestmark = pytest.mark.gpu
TOL = {"float32": 1e-5, "float64": 1e-12}


def blob(x, stype, xp):
    if stype == "default":
        return xp.asarray(x)
    b = SparseBlob(stype, x.shape, x.dtype, zero=False)
    (_sparse_cpu.dense_to_csr if stype == "csr" else _sparse_cpu.dense_to_rsp)(x, b)
    if xp is np:
        return b
    g = SparseBlob(stype, x.shape, x.dtype, xp, zero=False)
    g.data, g.indices = xp.asarray(b.data), xp.asarray(b.indices)
    g.indptr = None if b.indptr is None else xp.asarray(b.indptr)
    return g


def dense(out):
    import cupy
    if not isinstance(out, SparseBlob):
        return cupy.asnumpy(out) if isinstance(out, cupy.ndarray) else out
    d = np.zeros(out.shape, out.dtype)
    data, ix = cupy.asnumpy(out.data), cupy.asnumpy(out.indices)
    if out.stype == "row_sparse":
        d[ix] = data
    else:
        ip = cupy.asnumpy(out.indptr)
        rows = np.repeat(np.arange(out.shape[0]), np.diff(ip))
        d[rows, ix[:data.shape[0]]] = data
    return d


def run(op, device, prm, inputs, shapes, stypes, dtype, xp):
    outs = [xp.zeros(s, dtype) if t == "default" else SparseBlob(t, s, dtype, xp, zero=False)
            for s, t in zip(shapes, stypes)]
    registry.get(op).sparse_compute[device](prm, inputs, outs, ["write"] * len(outs))
    return outs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["csr.default", "csr.row_sparse", "csrT.default",
                                  "csrT.row_sparse", "default.csr", "default.csrT"])
@pytest.mark.parametrize("m, k, n", [(40, 30, 17), (0, 5, 3), (6, 0, 4), (5, 7, 0)])
def test_gpu_matches_cpu(dtype, kind, m, k, n):
    cupy = pytest.importorskip("cupy")
    ls, rs = kind.split(".")
    ta, tb = ls == "csrT", rs == "csrT"
    ls, rs = ls.rstrip("T"), rs.rstrip("T")
    lhs = sp.random(*((k, m) if ta else (m, k)), density=0.2, random_state=1,
                    dtype=dtype).toarray()
    rhs = sp.random(*((n, k) if tb else (k, n)), density=0.5, random_state=2,
                    dtype=dtype).toarray()
    if lhs.shape[0] > 2:
        lhs[1] = 0
    fwd = None if (ls, rs) != ("default", "csr") or not tb else "default"
    prm = {"transpose_a": ta, "transpose_b": tb, "forward_stype": fwd}
    gpu_stypes, mode = dot_storage(prm, [ls, rs], "gpu")
    assert mode == DISPATCH_COMPUTE_EX or (ls, rs) == ("default", "csr")
    if mode != DISPATCH_COMPUTE_EX:             # dense x csr -> csr: falls back on a GPU
        prm["forward_stype"] = "default"
        gpu_stypes, mode = dot_storage(prm, [ls, rs], "gpu")
    shape = ((lhs.shape[1] if ta else lhs.shape[0]), (rhs.shape[0] if tb else rhs.shape[1]))
    (want,) = run("dot", "cpu", prm, [blob(lhs, ls, np), blob(rhs, rs, np)], [shape],
                  gpu_stypes, dtype, np)
    (got,) = run("dot", "gpu", prm, [blob(lhs, ls, cupy), blob(rhs, rs, cupy)], [shape],
                 gpu_stypes, dtype, cupy)
    np.testing.assert_allclose(dense(got), dense(want), rtol=TOL[dtype], atol=TOL[dtype])
    if isinstance(want, SparseBlob):
        np.testing.assert_array_equal(cupy.asnumpy(got.indices), want.indices)


def test_gpu_backward_dot_row_sparse_gradient():
    cupy = pytest.importorskip("cupy")
    lhs = sp.random(50, 40, density=0.1, random_state=3, dtype="float32").toarray()
    w = np.random.default_rng(0).standard_normal((40, 8)).astype("float32")
    g = np.random.default_rng(1).standard_normal((50, 8)).astype("float32")
    prm = {"transpose_a": False, "transpose_b": False, "forward_stype": None}
    stypes, _ = backward_dot_storage(prm, ["default", "csr", "default"], "gpu")
    _, grad = run("_backward_dot", "gpu", prm,
                  [cupy.asarray(g), blob(lhs, "csr", cupy), cupy.asarray(w)],
                  [lhs.shape, w.shape], stypes, "float32", cupy)
    assert grad.stype == "row_sparse"
    np.testing.assert_allclose(dense(grad), lhs.T @ g, rtol=1e-4, atol=1e-5)
