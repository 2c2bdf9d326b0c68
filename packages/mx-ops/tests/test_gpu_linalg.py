"""The linalg family's CuPy twin against its CPU kernels: every forward and
backward operator, both dtypes, reqs 'write' and 'add', batched inputs.
Skipped without CuPy and a CUDA device (tests/test_gpu_sources.py imports
the twin everywhere CuPy is)."""
import numpy as np
import pytest

from mx_ops import invoke

rng = np.random.default_rng(3)
T = lambda x: np.swapaxes(x, -1, -2)   # noqa: E731


def _spd(*s):
    a = rng.standard_normal(s)
    return a @ T(a) + s[-1] * np.eye(s[-1])


def _low(*s):
    return np.tril(rng.standard_normal(s)) + 3 * np.eye(s[-1])


def _r(*s):
    return rng.standard_normal(s)


CASES = [
    ("_linalg_gemm", lambda: [_r(2, 3, 4), _r(2, 5, 4), _r(2, 3, 5)],
     dict(transpose_b=True, alpha=0.5, beta=2.0)),
    ("_linalg_gemm2", lambda: [_r(3, 2, 4), _r(4, 2, 5)], dict(axis=0)),
    ("_linalg_gemm2", lambda: [_r(2, 4, 3), _r(2, 5, 4)], dict(transpose_a=True, transpose_b=True)),
    ("_linalg_potrf", lambda: [_spd(2, 4, 4)], {}),
    ("_linalg_potrf", lambda: [_spd(4, 4)], dict(lower=False)),
    ("_linalg_potri", lambda: [_low(2, 4, 4)], {}),
    ("_linalg_potri", lambda: [T(_low(4, 4))], dict(lower=False)),
    ("_linalg_trmm", lambda: [_low(2, 3, 3), _r(2, 3, 4)], dict(alpha=1.5)),
    ("_linalg_trmm", lambda: [T(_low(3, 3)), _r(4, 3)], dict(lower=False, rightside=True,
                                                              transpose=True)),
    ("_linalg_trsm", lambda: [_low(2, 3, 3), _r(2, 3, 4)], dict(alpha=-2.0, transpose=True)),
    ("_linalg_trsm", lambda: [_low(3, 3), _r(4, 3)], dict(rightside=True)),
    ("_linalg_syrk", lambda: [_r(2, 3, 4)], dict(alpha=2.0)),
    ("_linalg_syrk", lambda: [_r(3, 4)], dict(transpose=True)),
    ("_linalg_gelqf", lambda: [_r(2, 3, 5)], {}),
    ("_linalg_syevd", lambda: [_spd(2, 4, 4)], {}),
    ("_linalg_inverse", lambda: [_spd(2, 4, 4)], {}),
    ("_linalg_det", lambda: [_r(3, 4, 4)], {}),
    ("_linalg_slogdet", lambda: [_r(3, 4, 4)], {}),
    ("_linalg_sumlogdiag", lambda: [_spd(2, 4, 4)], {}),
    ("_linalg_extractdiag", lambda: [_r(2, 4, 4)], dict(offset=-1)),
    ("_linalg_makediag", lambda: [_r(2, 3)], dict(offset=2)),
    ("_linalg_extracttrian", lambda: [_r(2, 4, 4)], dict(lower=False)),
    ("_linalg_extracttrian", lambda: [_r(4, 4)], dict(offset=-1)),
    ("_linalg_maketrian", lambda: [_r(2, 6)], dict(offset=1)),
    ("_linalg_maketrian", lambda: [_r(6)], dict(lower=False)),
    ("_backward_linalg_potrf", lambda: [_r(2, 4, 4), np.linalg.cholesky(_spd(2, 4, 4))], {}),
    ("_backward_linalg_potri", lambda: _potri_inputs(), {}),
    ("_backward_linalg_gelqf", lambda: _factor_inputs("_linalg_gelqf", _r(2, 3, 5)), {}),
    ("_backward_linalg_syevd", lambda: _factor_inputs("_linalg_syevd", _spd(2, 4, 4)), {}),
    ("_backward_linalg_det", lambda: _det_inputs(), {}),
    ("_backward_linalg_slogdet", lambda: [_r(3), _r(3, 4, 4)], {}),
    ("_backward_linalg_sumlogdiag", lambda: [_r(2), _spd(2, 4, 4)], {}),
]


def _potri_inputs():
    low = _low(2, 4, 4)
    return [_r(2, 4, 4), low, np.linalg.inv(low @ T(low))]


def _factor_inputs(op, a):
    outs = invoke(op, [a])
    return [_r(*outs[0].shape), _r(*outs[1].shape), outs[0], outs[1]]


def _det_inputs():
    a = _r(3, 4, 4)
    return [_r(3), a, np.linalg.det(a)]


@pytest.mark.gpu
@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", range(len(CASES)))
def test_gpu_linalg_matches_cpu(k, dtype, req):
    import cupy
    op, make, kw = CASES[k]
    inputs = [x.astype(dtype) for x in make()]
    want = invoke(op, inputs, **kw)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    bases = [rng.standard_normal(w.shape).astype(w.dtype) for w in want]   # det's pivots: int32
    cpu, gpu = [b.copy() for b in bases], [cupy.asarray(b) for b in bases]
    invoke(op, inputs, out=cpu if len(cpu) > 1 else cpu[0], req=req, **kw)
    invoke(op, [cupy.asarray(x) for x in inputs], out=gpu if len(gpu) > 1 else gpu[0],
           req=req, **kw)
    tol = 2e-3 if dtype == "float32" else 1e-9
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(cupy.asnumpy(g), c, rtol=tol, atol=tol, err_msg=op)
