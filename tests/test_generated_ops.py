"""mx.nd's and mx.sym's operator functions are generated from the registry
(tools/generate_ops.py): they must not drift from it, every name must be a
real function or a one-line alias of one, every input must be documented,
and they must work."""
import importlib.util
import inspect
import pydoc
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mx
import mx_graph
import mx_ndarray as nd
import mx_ops
from mx_ops import registry
from mx_ops.core.registry import OpDef

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("generate_ops", ROOT / "tools" / "generate_ops.py")
generate_ops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_ops)

MODULES = {"ndarray": (nd.op, nd._internal), "symbol": (mx_graph.op, mx_graph._internal)}


def _static_ops():
    return [mx_ops.get(n) for n in mx_ops.list_ops()
            if getattr(mx_ops.get(n), "library", None) is None]


def _generated(frontend, name):
    """The generated function of ``name`` (the module's own attribute, not
    its runtime fallback)."""
    public, internal = MODULES[frontend]
    module = internal if name.startswith("_") else public
    assert name in vars(module), f"{module.__name__} does not define {name}"
    return vars(module)[name]


def test_generated_files_match_the_registry():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "generate_ops.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_new_operator_or_alias_makes_the_files_stale():
    registry.register(OpDef("t_gen_probe", arguments=("data",), aliases=("_t_gen_alias",),
                            infer_shape=lambda p, s: [s[0]], infer_type=lambda p, t: [t[0]],
                            compute={}, doc="Probe (test)."))
    try:
        files = generate_ops.render()
    finally:
        registry._unregister("t_gen_probe")
    for package in ("mx-ndarray/mx_ndarray", "mx-graph/mx_graph"):
        root = ROOT / "packages" / package
        assert "\ndef t_gen_probe(data=None" in files[root / "op.py"]
        assert "\n_t_gen_alias = " in files[root / "_internal.py"]
        assert files[root / "op.py"] != (root / "op.py").read_text()
    assert generate_ops.render() == {path: path.read_text() for path in files}


@pytest.mark.parametrize("frontend", list(MODULES))
def test_one_function_per_operator_and_aliases_are_assignments(frontend):
    defs = 0
    for module in MODULES[frontend]:
        text = Path(module.__file__).read_text()
        defs += len(re.findall(r"^def ", text, re.M))
    assert defs == len(_static_ops())
    for op in _static_ops():
        names = (op.name,) + op.aliases
        functions = [_generated(frontend, n) for n in names]
        home = {getattr(f, "__wrapped__", f) for f in functions}
        assert len(home) == 1, op.name
        if frontend == "ndarray":
            assert len(set(map(id, functions))) == 1, op.name   # plain assignments


def test_nd_aliases_are_the_same_function():
    assert nd._internal._plus is nd.elemwise_add
    assert nd._internal._copy is nd.identity and nd.normal is nd.random_normal
    a = nd.array(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(nd._internal._Plus(a, a).asnumpy(), [0, 2, 4])


def test_every_registered_input_is_described():
    for op in _static_ops():
        for arg in op.arguments:
            assert op.input_doc(arg), f"{op.name}: input '{arg}' has no description"


@pytest.mark.parametrize("frontend", list(MODULES))
def test_docstrings_document_every_input(frontend):
    kind = "Symbol" if frontend == "symbol" else "NDArray"
    for op in _static_ops():
        doc = " ".join(inspect.getdoc(_generated(frontend, op.name)).split())
        for arg in op.arguments:
            text = " ".join(op.input_doc(arg).split())
            if op.variadic:
                assert f"{arg} : {kind}[] {text}" in doc and "Given positionally" in doc
            else:
                assert f"{arg} : {kind}" in doc and text in doc, (op.name, arg)
                if frontend == "symbol":
                    assert f"'<name>_{arg}'" in doc, (op.name, arg)


def test_nd_signatures_list_inputs_then_parameters():
    params = inspect.signature(nd.FullyConnected).parameters
    assert list(params) == ["data", "weight", "bias", "num_hidden", "no_bias", "flatten",
                            "out", "name", "kwargs"]
    assert repr(params["num_hidden"].default) == "_Null"


def test_every_operator_name_has_a_function():
    for name in mx_ops.list_ops():
        for alias in (name,) + mx_ops.get(name).aliases:
            module = nd._internal if alias.startswith("_") else nd
            assert callable(getattr(module, alias)), alias
            assert callable(getattr(mx.sym, alias)), alias


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


def test_help_shows_the_functions_with_their_signatures():
    text = pydoc.render_doc(mx.sym, renderer=pydoc.plaintext)
    assert "FullyConnected(data=None, weight=None, bias=None, num_hidden=_Null" in text
    assert "elemwise_add(lhs=None, rhs=None, name=None, attr=None, **kwargs)" in text
    text = pydoc.render_doc(mx.nd.FullyConnected, renderer=pydoc.plaintext)
    assert "out=None, name=None, **kwargs)" in text and "Weight matrix" in text
