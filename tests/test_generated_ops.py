"""mx.nd's operator functions are generated from the registry: they must
not drift from it, and they must work."""
import subprocess
import sys
from pathlib import Path

import numpy as np

import mx_ndarray as nd
import mx_ops

ROOT = Path(__file__).resolve().parent.parent


def test_generated_files_match_the_registry():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "generate_nd_ops.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_operator_name_has_a_function():
    for name in mx_ops.list_ops():
        for alias in (name,) + mx_ops.get(name).aliases:
            module = nd._internal if alias.startswith("_") else nd
            assert callable(getattr(module, alias)), alias


def test_generated_functions_call_the_operator():
    a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_allclose(nd.exp(a).asnumpy(), np.exp(a.asnumpy()), rtol=1e-6)
    np.testing.assert_array_equal(nd.broadcast_add(a, nd.ones((3,))).asnumpy(),
                                  a.asnumpy() + 1)
    np.testing.assert_array_equal(nd._internal._plus_scalar(a, scalar=2).asnumpy(),
                                  a.asnumpy() + 2)
    out = nd.zeros((2, 3))
    nd.relu(a - 2, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.maximum(a.asnumpy() - 2, 0))
    assert "Absolute value" in nd.abs.__doc__
