"""mx.viz against MXNet 1.9.1: print_summary's tables and plot_network's
Digraphs for the networks of data/viz_nets.py, compared with what MXNet
printed and built for the same networks (data/viz_<net>.json, written by
data/make_viz_expected.py)."""
import importlib.util
import json
import pathlib
import re
import sys
import types

import numpy as np
import pytest

from mx_graph import name, sym, viz

DATA = pathlib.Path(__file__).parent / "data"

# What data/viz_nets.py reads of ``mx``; mx-graph's tests stay below the
# meta-package (tests/test_mx_viz.py checks mx.viz itself).
mx = types.SimpleNamespace(sym=sym, name=name, viz=viz)


def _load_nets():
    spec = importlib.util.spec_from_file_location("viz_nets", DATA / "viz_nets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NETS


NETS = _load_nets()


def _expected(name):
    out = json.loads((DATA / f"viz_{name}.json").read_text())
    for key in ("data_shapes", "input_shapes"):
        out[key] = {k: tuple(v) for k, v in out[key].items()}
    return out


@pytest.fixture(params=sorted(NETS))
def net(request):
    """(name, symbol, expected MXNet outputs)."""
    symbol, _ = NETS[request.param](mx)
    return request.param, symbol, _expected(request.param)


def _summary(capsys, symbol, **kwargs):
    capsys.readouterr()
    mx.viz.print_summary(symbol, **kwargs)
    return capsys.readouterr().out


# -- print_summary ---------------------------------------------------------
def test_summary_matches_mxnet(net, capsys):
    _, symbol, expected = net
    assert _summary(capsys, symbol, shape=expected["input_shapes"]) == expected["summary"]


def test_summary_without_shapes_matches_mxnet(net, capsys):
    # No shapes: blank Output Shape column, counts from attributes only.
    _, symbol, expected = net
    assert _summary(capsys, symbol) == expected["summary_no_shape"]


def test_summary_absolute_positions_match_mxnet(net, capsys):
    _, symbol, expected = net
    got = _summary(capsys, symbol, shape=expected["input_shapes"], line_length=80,
                   positions=[30, 50, 60, 80])
    assert got == expected["summary_narrow"]


@pytest.mark.parametrize("net", sorted(NETS))
def test_summary_from_data_shape_alone(net, capsys):
    # Every weight's shape follows from the data's (partial inference).
    symbol, data_shapes = NETS[net](mx)
    assert _summary(capsys, symbol, shape=data_shapes) == _expected(net)["summary"]


def test_summary_parameter_totals(capsys):
    # MXNet 1.9.1's totals, spelled out (the LeNet's is its known 431080).
    totals = {}
    for name in NETS:
        symbol, _ = NETS[name](mx)
        out = _summary(capsys, symbol, shape=_expected(name)["input_shapes"])
        totals[name] = int(re.search(r"Total params: (\d+)", out)[1])
    assert totals == {"mlp": 14218, "lenet": 431080, "bn": 1248, "misc": 1444}


def test_summary_rejects_non_symbols():
    with pytest.raises(TypeError, match="symbol must be Symbol, got dict"):
        mx.viz.print_summary({"data": 1})


def test_summary_incomplete_shapes_name_the_unknown_inputs():
    symbol, _ = NETS["lenet"](mx)
    with pytest.raises(ValueError, match=r"Input shape is incomplete; .*conv1_weight"):
        mx.viz.print_summary(symbol, shape={"softmax_label": (64,)})


# -- plot_network ----------------------------------------------------------
@pytest.fixture
def graphviz():
    """python-graphviz, an optional dependency: its tests skip without it."""
    return pytest.importorskip("graphviz")

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|->|[\[\]={}]|[^\s\[\]={}"]+')


def _unquote(token):
    if token.startswith('"'):
        return re.sub(r'\\(.)', r'\1', token[1:-1])
    return token


def parse_dot(source):
    """(graph name, statements) of a Digraph's source: ('node', name,
    attrs) and ('edge', tail, head, attrs) in order, quoting normalised,
    so sources written by different python-graphviz versions compare."""
    tokens = _TOKEN.findall(source)
    assert tokens[0] == "digraph" and tokens[2] == "{" and tokens[-1] == "}", source
    name, tokens, pos, statements = _unquote(tokens[1]), tokens[3:-1], 0, []
    while pos < len(tokens):
        first = _unquote(tokens[pos])
        pos += 1
        head = None
        if pos < len(tokens) and tokens[pos] == "->":
            head = _unquote(tokens[pos + 1])
            pos += 2
        attrs = {}
        if pos < len(tokens) and tokens[pos] == "[":
            pos += 1
            while tokens[pos] != "]":
                assert tokens[pos + 1] == "=", tokens[pos:pos + 3]
                attrs[_unquote(tokens[pos])] = _unquote(tokens[pos + 2])
                pos += 3
            pos += 1
        statements.append(("node", first, attrs) if head is None
                          else ("edge", first, head, attrs))
    return name, statements


@pytest.mark.parametrize("variant, kwargs", [
    ("plot", {"shape": True}),
    ("plot_no_shape", {}),
    ("plot_dtype", {"shape": True, "dtype": {"data": np.float32}}),
    ("plot_weights", {"hide_weights": False,
                      "node_attrs": {"shape": "oval", "fixedsize": "false"}}),
])
def test_plot_matches_mxnet(graphviz, net, variant, kwargs):
    name, symbol, expected = net
    if kwargs.get("shape"):
        kwargs = dict(kwargs, shape=expected["input_shapes"])
    dot = mx.viz.plot_network(symbol, title=name, **kwargs)
    assert isinstance(dot, graphviz.Digraph)
    assert parse_dot(dot.source) == parse_dot(expected[variant])
    # Byte for byte too: python-graphviz 0.8.4 (MXNet's) and 0.21 write the
    # same statements and differ only in the final newline.
    assert dot.source.rstrip("\n") == expected[variant].rstrip("\n")


def test_plot_from_data_shape_alone(graphviz):
    symbol, data_shapes = NETS["mlp"](mx)
    dot = mx.viz.plot_network(symbol, title="mlp", shape=data_shapes)
    assert parse_dot(dot.source) == parse_dot(_expected("mlp")["plot"])


def test_plot_edges_follow_the_graph(graphviz):
    # Every operator's edges point back at its inputs, weights hidden.
    symbol, _ = NETS["bn"](mx)
    _, statements = parse_dot(mx.viz.plot_network(symbol).source)
    edges = [(s[1], s[2]) for s in statements if s[0] == "edge"]
    assert ("_plus0", "bn1") in edges and ("_plus0", "lrelu0") in edges
    assert not any(head.endswith(("_weight", "_gamma", "_moving_mean")) for _, head in edges)


def test_plot_title_and_format(graphviz):
    symbol, _ = NETS["mlp"](mx)
    dot = mx.viz.plot_network(symbol, title="net", save_format="png")
    assert dot.name == "net" and dot.format == "png"


def test_plot_warns_on_repeated_names(graphviz):
    a, b = mx.sym.Variable("x"), mx.sym.Variable("x")
    with pytest.warns(RuntimeWarning, match="Repeated names: x"):
        mx.viz.plot_network(a + b)


def test_plot_rejects_non_symbols(graphviz):
    with pytest.raises(TypeError, match="symbol must be a Symbol, got int"):
        mx.viz.plot_network(3)


def test_plot_incomplete_shapes(graphviz):
    symbol, _ = NETS["lenet"](mx)
    with pytest.raises(ValueError, match="Input shape is incomplete"):
        mx.viz.plot_network(symbol, shape={"softmax_label": (64,)})


def test_plot_without_graphviz_says_so(monkeypatch):
    # A None entry in sys.modules makes ``import graphviz`` fail.
    monkeypatch.setitem(sys.modules, "graphviz", None)
    symbol, _ = NETS["mlp"](mx)
    with pytest.raises(ImportError, match="Draw network requires graphviz library"):
        mx.viz.plot_network(symbol)
