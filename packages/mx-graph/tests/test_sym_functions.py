"""The generated ``mx.sym`` operator functions (mx_graph/op.py and
_internal.py) against MXNet 1.9.1's: every registered name, aliases
included, called with no inputs, with inputs by position and by name, and
under a name prefix, an attribute scope and ``attr=``, writes the
-symbol.json MXNet writes, byte for byte (data/sym_calls.json.gz, made by
data/make_sym_calls.py)."""
import gzip
import importlib.util
import inspect
import json
import pathlib

import pytest
from hypothesis import given, settings, strategies as st

from mx_graph import _internal, _runtime_ops, op, op_functions, sym
from mx_ops import Param, registry

DATA = pathlib.Path(__file__).parent / "data"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


calls = _load("make_sym_calls")
mx = _load("reference_nets").local_mx()
RECORDS = json.loads(gzip.decompress((DATA / "sym_calls.json.gz").read_bytes()))

# Calls where this project's registration, not the function, differs from
# MXNet's; each must still differ (else drop it here).
KNOWN = {
    # MXNet's bilinear UpSampling gives its weight variable __init__.
    ("UpSampling", "positional"): "the weight variable's __init__ attribute",
    # MXNet's backward operators list other inputs, or none.
    ("_backward_cast", "auto"): "MXNet lists (data) only",
    ("_backward_diag", "auto"): "MXNet lists (data) only",
    ("_backward_L2Normalization", "auto"): "MXNet lists no inputs",
    ("_backward_InstanceNorm", "auto"): "MXNet lists no inputs",
    ("_backward_SVMOutput", "auto"): "MXNet lists no inputs",
    ("_backward_MakeLoss", "auto"): "MXNet lists no inputs",
    ("_backward_slice", "auto"): "MXNet lists no inputs",
    ("_backward_gamma", "auto"): "MXNet names the second input rhs",
    ("_backward_gamma", "scoped"): "MXNet names the second input rhs",
    ("_backward_gammaln", "auto"): "MXNet names the second input rhs",
    ("_backward_gammaln", "scoped"): "MXNet names the second input rhs",
    ("_backward_smooth_l1", "auto"): "MXNet names the second input rhs",
    ("_backward_smooth_l1", "scoped"): "MXNet names the second input rhs",
    ("_backward_log_softmax", "auto"): "MXNet names the second input output",
    ("_backward_log_softmax", "scoped"): "MXNet names the second input output",
    ("_backward_softmax", "auto"): "MXNet names the second input output",
    ("_backward_softmax", "scoped"): "MXNet names the second input output",
    ("_backward_softmin", "auto"): "MXNet names the inputs ograd and output",
    ("_backward_softmin", "scoped"): "MXNet names the inputs ograd and output",
    ("_backward_Pad", "auto"): "MXNet lists no inputs",
    ("_backward_ROIPooling", "auto"): "MXNet lists no inputs",
    ("_backward_contrib_BilinearResize2D", "auto"): "MXNet lists one input, data (the output "
                                                    "gradient)",
    ("_backward_contrib_AdaptiveAvgPooling2D", "auto"): "MXNet lists one input, data (the "
                                                        "output gradient)",
    ("_backward_SequenceLast", "auto"): "MXNet lists no inputs",
    ("_backward_repeat", "auto"): "MXNet lists one input, data (the output gradient)",
    ("_backward_slice_like", "auto"): "MXNet lists one input, data (the output gradient)",
    ("_backward_tile", "auto"): "MXNet lists one input, data (the output gradient)",
    ("_backward_im2col", "auto"): "MXNet lists one input, data (the output gradient)",
    ("_backward_GridGenerator", "auto"): "MXNet lists no inputs",
    ("_backward_BilinearSampler", "auto"): "MXNet lists no inputs",
    ("_backward_SpatialTransformer", "auto"): "MXNet lists no inputs",
    ("_backward_Correlation", "auto"): "MXNet lists no inputs",
    # node_row_ptr counts RNN's hidden reserve output (the gates the backward
    # reads), which MXNet keeps in its stateful operator instead
    ("RNN", "auto"): "node_row_ptr counts the hidden reserve output",
    ("RNN", "scoped"): "node_row_ptr counts the hidden reserve output",
}


def _ours(record):
    try:
        return calls.call(mx, record)
    except Exception as exc:       # shown in the failure, beside MXNet's JSON
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("record", [r for r in RECORDS if r["mxnet"] is not None],
                         ids=lambda r: f"{r['name']}-{r['how']}")
def test_calls_write_what_mxnet_writes(record):
    key = (record["name"], record["how"])
    if key in KNOWN:
        assert _ours(record) != record["mxnet"], f"{key} now matches MXNet: drop it from KNOWN"
    else:
        assert _ours(record) == record["mxnet"]


def test_every_registered_name_was_called():
    called = {r["name"] for r in RECORDS}
    for name in registry.list_ops():
        entry = registry.get(name)
        if getattr(entry, "library", None) is None:
            assert {name, *entry.aliases} <= called


def test_an_alias_names_its_nodes_after_itself():
    a, b = sym.Variable("a"), sym.Variable("b")
    with mx.name.NameManager():
        assert sym.elemwise_add(a, b).name == "elemwise_add0"
        assert sym._internal._plus(a, b).name == "_plus0"
        assert sym._Plus(a, b).name == "_plus1"       # one count per hint
        assert sym.sum_axis(a).name == "sum_axis0" and sym.sum(a).name == "sum0"


def test_submodule_operators_are_named_after_their_function_there():
    # MXNet 1.9.1: mx.sym.contrib.quadratic(x).name == 'quadratic0'; the
    # non-_like _random_ operators keep their full name (they live in _internal)
    x = sym.Variable("x")
    with mx.name.NameManager():
        assert _internal._contrib_quadratic(x).name == "quadratic0"
        assert _internal._contrib_BilinearResize2D(x, height=2, width=2).name == \
            "bilinearresize2d0"
        assert _internal._linalg_potrf(x).name == "potrf0"
        assert _internal._random_uniform_like(x).name == "uniform_like0"
        assert _internal._random_uniform().name == "_random_uniform0"
        assert _internal._contrib_quadratic(x).name == "quadratic1"


def test_list_and_tuple_parameters_are_stored_as_mxnet_stores_them():
    # MXNet 1.9.1 stores str(value): '[1, 2]' for a list, '(1, 2)' for a tuple.
    x = sym.Variable("x")
    assert op.Reshape(x, shape=[1, 2]).list_attr() == {"shape": "[1, 2]"}
    assert op.Reshape(x, shape=(1, 2)).list_attr() == {"shape": "(1, 2)"}
    assert op.slice(x, begin=(0, None), end=[1, 2]).list_attr() == {"begin": "(0, None)",
                                                                     "end": "[1, 2]"}
    assert op.Reshape(x, shape=[1, 2]).infer_shape(x=(2,))[1] == [(1, 2)]


def test_aliases_are_the_canonical_function_under_another_name():
    for canonical in registry.list_ops():
        entry = registry.get(canonical)
        names = (canonical,) + entry.aliases
        functions = [getattr(_internal if n.startswith("_") else op, n) for n in names]
        home = [f for f in functions if not hasattr(f, "__wrapped__")]
        assert len(home) == 1, canonical          # one def per operator
        for name, fn in zip(names, functions):
            assert fn.__name__ == name or fn is home[0]
            assert inspect.signature(fn) == inspect.signature(home[0])
            assert fn.__doc__ == home[0].__doc__


def test_signatures_are_mxnets():
    """Inputs, then the parameters, then name and attr (MXNet's also has
    out=, which a Symbol function ignores; here it is an unknown argument)."""
    assert list(inspect.signature(sym.FullyConnected).parameters) == [
        "data", "weight", "bias", "num_hidden", "no_bias", "flatten", "name", "attr", "kwargs"]
    concat = inspect.signature(sym.Concat).parameters
    assert list(concat) == ["data", "dim", "name", "attr", "kwargs"]
    assert concat["data"].kind is inspect.Parameter.VAR_POSITIONAL
    assert repr(concat["dim"].default) == "_Null"


def test_docstrings_say_what_each_input_is():
    doc = " ".join(sym.FullyConnected.__doc__.split())
    assert "weight : Symbol, optional Weight matrix" in doc
    assert "'<name>_weight'" in doc and "attr : dict" in doc and "Returns" in doc
    doc = " ".join(sym.Concat.__doc__.split())
    assert "data : Symbol[]" in doc and "'num_args' is filled from their number" in doc


def test_missing_inputs_become_variables_named_after_the_node():
    fc = sym.FullyConnected(num_hidden=3, name="fc")
    assert fc.list_arguments() == ["fc_data", "fc_weight", "fc_bias"]
    fc = sym.FullyConnected(sym.Variable("x"), bias=sym.Variable("b"), num_hidden=3, name="g")
    assert fc.list_arguments() == ["x", "g_weight", "b"]


def test_parameters_by_position_follow_the_inputs():
    x = sym.Variable("x")
    assert sym.FullyConnected(x, None, None, 5, True, name="fc").list_attr() == {
        "no_bias": "True", "num_hidden": "5"}
    # One attribute order whatever the call's, as MXNet lists them.
    a = sym.FullyConnected(x, num_hidden=2, flatten=False, name="a").list_attr()
    b = sym.FullyConnected(x, flatten=False, num_hidden=2, name="b").list_attr()
    assert list(a.items()) == list(b.items()) == [("flatten", "False"), ("num_hidden", "2")]


def test_call_errors_name_the_operator_and_argument():
    x = sym.Variable("x")
    with pytest.raises(TypeError, match="FullyConnected: input 'weight' must be a Symbol, "
                                        "got int"):
        sym.FullyConnected(x, 3)
    with pytest.raises(TypeError, match="multiple values for argument 'num_hidden'"):
        sym.FullyConnected(x, None, None, 3, num_hidden=4)
    with pytest.raises(TypeError, match="FullyConnected: unknown input 'bias'; its inputs are "
                                        "data, weight"):
        sym.FullyConnected(x, bias=x, num_hidden=2, no_bias=True)
    with pytest.raises(TypeError, match="Concat: takes its inputs positionally"):
        sym.Concat(x, data=x)
    with pytest.raises(AttributeError, match="module 'mx.sym' has no attribute '_nope'"):
        sym._nope


def test_op_functions_function_resolves_generated_and_alias_names():
    assert op_functions.function("FullyConnected") is op.FullyConnected
    assert op_functions.function("_plus") is _internal._plus
    with pytest.raises(AttributeError):
        op_functions.function("NoSuchOperator")


# -- operators registered at run time, and the property tying them -------------

def _register(name, aliases=()):
    return registry.register(registry.OpDef(
        name, arguments=("data", "scale"), aliases=aliases,
        params={"k": Param("float", 1.0, doc="A factor.")}, infer_shape=lambda p, s: [tuple(s[0])],
        infer_type=lambda p, t: [t[0]], compute={}, doc="Scales its input (test)."))


@pytest.fixture
def runtime_ops():
    _register("t_sym_runtime", aliases=("_t_sym_runtime_alias",))
    _register("_t_sym_runtime_internal")
    yield
    registry._unregister("t_sym_runtime")
    registry._unregister("_t_sym_runtime_internal")


def test_runtime_registered_ops_resolve_through_the_registry(runtime_ops):
    x = sym.Variable("x")
    with mx.name.NameManager():
        s = sym.t_sym_runtime(x, k=2)
        assert s.name == "t_sym_runtime0" and s.list_arguments() == ["x", "t_sym_runtime0_scale"]
        assert sym._t_sym_runtime_alias(x).name == "_t_sym_runtime_alias0"
        assert sym._internal._t_sym_runtime_internal(scale=x).list_arguments() == [
            "_t_sym_runtime_internal0_data", "x"]
        assert op.t_sym_runtime(x, x, 3).list_attr() == {"k": "3"}
    assert sym.t_sym_runtime is sym.t_sym_runtime
    assert "Scales its input" in sym.t_sym_runtime.__doc__
    assert "'<name>_scale'" in sym.t_sym_runtime.__doc__
    assert "t_sym_runtime" in dir(sym)
    with pytest.raises(AttributeError):
        op._t_sym_runtime_internal          # '_'-names live in _internal
    with pytest.raises(AttributeError):
        _internal.t_sym_runtime


NAMES = sorted(n for canonical in registry.list_ops()
               if getattr(registry.get(canonical), "library", None) is None
               and canonical not in ("Custom", "_backward_Custom")   # need a CustomOpProp
               for n in (canonical,) + registry.get(canonical).aliases)


def _outcome(fn, args, kwargs):
    """The call's JSON, or its error's type (whose text may name the
    function called rather than the operator)."""
    with mx.name.NameManager():
        try:
            return fn(*args, **kwargs).tojson()
        except Exception as exc:
            return type(exc)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_generated_and_runtime_functions_compose_alike(data):
    """The generated function and the one the runtime fallback builds for
    the same name take the same calls to the same graph or error: inputs
    by position and by name in any mix, parameters, name= and attr=."""
    name = data.draw(st.sampled_from(NAMES))
    entry = registry.get(name)
    arg_names, param_names = entry.call_signature()
    if arg_names is None:
        args = [sym.Variable(f"v{i}") for i in range(data.draw(st.integers(0, 3)))]
        kwargs = {}
    else:
        npos = data.draw(st.integers(0, len(arg_names)))
        args = [sym.Variable(a) for a in arg_names[:npos]]
        rest = arg_names[npos:]
        named = data.draw(st.lists(st.sampled_from(rest), unique=True)) if rest else []
        kwargs = {a: sym.Variable(f"n_{a}") for a in named}
    for key, spec in entry.params.items():
        if key != entry.key_var_num_args and (spec.required or data.draw(st.booleans())):
            kwargs[key] = calls._value(spec) if spec.required else spec.default
    if arg_names is not None and npos == len(arg_names) and param_names:
        # Parameters by position after the inputs (given twice when also named).
        for key in param_names[:data.draw(st.integers(0, len(param_names)))]:
            spec = entry.params[key]
            args.append(calls._value(spec) if spec.required else spec.default)
    if data.draw(st.booleans()):
        kwargs["name"] = "given"
    if data.draw(st.booleans()):
        kwargs["attr"] = {"lr_mult": "2"}
    generated = getattr(_internal if name.startswith("_") else op, name)
    runtime = _runtime_ops.fallback("test", name.startswith("_"), _runtime_ops._make)(name)
    assert _outcome(generated, args, kwargs) == _outcome(runtime, args, kwargs)
