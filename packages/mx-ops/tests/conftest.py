"""Helpers shared by the neural-network operator tests, as the ``nn``
fixture (tests run with --import-mode=importlib, so they cannot import a
sibling module)."""
import types

import numpy as np
import pytest

from mx_ops import invoke

TOL = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-10}


def check_reqs(name, inputs, expected, params, dtype, nout=None):
    """Runs ``name`` under write, inplace-less add and null for each output
    and compares with ``expected`` (list of arrays)."""
    expected = [np.asarray(e) for e in expected]
    tol = TOL[dtype]
    got = invoke(name, inputs, **params)
    got = got if isinstance(got, list) else [got]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.astype(np.float64), e, rtol=tol, atol=tol)
    rng = np.random.default_rng(1)
    base = [rng.standard_normal(e.shape).astype(dtype) for e in expected]
    outs = [b.copy() for b in base]
    invoke(name, inputs, out=outs if len(outs) > 1 else outs[0], req="add", **params)
    for o, b, e in zip(outs, base, expected):
        np.testing.assert_allclose(o.astype(np.float64), b.astype(np.float64) + e,
                                   rtol=tol, atol=tol * 4)
    outs = [b.copy() for b in base]
    invoke(name, inputs, out=outs if len(outs) > 1 else outs[0], req="null", **params)
    for o, b in zip(outs, base):
        np.testing.assert_array_equal(o, b)


def numeric_grad(f, x, og, eps=1e-6):
    """d sum(f(x) * og) / dx by central differences (float64)."""
    x = x.astype(np.float64).copy()
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = np.sum(f(x) * og)
        flat[i] = old - eps
        lo = np.sum(f(x) * og)
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return g


@pytest.fixture
def nn():
    """check_reqs, numeric_grad and TOL."""
    return types.SimpleNamespace(check_reqs=check_reqs, numeric_grad=numeric_grad, TOL=TOL)
