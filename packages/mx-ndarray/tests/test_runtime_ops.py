"""Operators registered after the generated op.py / _internal.py were
written (custom-operator libraries, mx.library.load) are reachable as
``mx_ndarray.<name>`` and ``mx_ndarray._internal.<_name>`` through the
modules' ``__getattr__`` fallback to the registry."""
import numpy as np
import pytest

import mx_ndarray as nd
from mx_ops import registry
from mx_ops.core.registry import OpDef


def _register(name):
    def compute(params, inputs, outputs, reqs):
        outputs[0][...] = inputs[0] * 3

    return registry.register(OpDef(name, arguments=("data",),
                                   infer_shape=lambda p, s: [tuple(s[0])],
                                   infer_type=lambda p, t: [t[0]], compute={"cpu": compute},
                                   doc="Triples its input (test)."))


@pytest.fixture
def runtime_ops():
    _register("runtime_triple")
    _register("_runtime_triple_internal")
    yield
    registry._unregister("runtime_triple")
    registry._unregister("_runtime_triple_internal")


def test_runtime_registered_ops_resolve_through_the_registry(runtime_ops):
    x = nd.array(np.arange(4, dtype=np.float32))
    for fn in (nd.runtime_triple, nd.op.runtime_triple,
               nd._internal._runtime_triple_internal):
        np.testing.assert_array_equal(fn(x).asnumpy(), 3 * np.arange(4))
    out = nd.zeros((4,))
    nd.runtime_triple(x, out=out, name="ignored")
    np.testing.assert_array_equal(out.asnumpy(), 3 * np.arange(4))
    assert nd.runtime_triple is nd.runtime_triple
    assert "Triples its input" in nd.runtime_triple.__doc__
    assert nd.runtime_triple.__name__ == "runtime_triple"


def test_unknown_and_misplaced_names_are_attribute_errors(runtime_ops):
    with pytest.raises(AttributeError, match="no attribute 'no_such_op'"):
        nd.no_such_op
    # Public names in mx.nd, '_'-names in mx.nd._internal, as generated.
    with pytest.raises(AttributeError):
        nd._runtime_triple_internal
    with pytest.raises(AttributeError):
        nd._internal.runtime_triple
    assert not hasattr(nd, "__no_dunder__")


def test_a_reregistered_name_gets_a_fresh_function():
    _register("runtime_again")
    first = nd.runtime_again
    registry._unregister("runtime_again")
    with pytest.raises(AttributeError):
        nd.runtime_again
    _register("runtime_again")
    try:
        assert nd.runtime_again is not first
        np.testing.assert_array_equal(nd.runtime_again(nd.ones((2,))).asnumpy(), [3, 3])
    finally:
        registry._unregister("runtime_again")
