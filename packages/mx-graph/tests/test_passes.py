"""The graph IR and the passes alone (no executor): IndexedGraph numbering,
the Gradient pass evaluated with mx_ops.core.node.evaluate against finite
differences, PlanMemory on hand-checked graphs."""
import numpy as np
import pytest

from mx_graph import sym
from mx_graph.graph import Graph, IndexedGraph
from mx_graph.passes.gradient import gradient
from mx_graph.passes.infer import infer_shape, infer_type
from mx_graph.passes.plan_memory import EXTERNAL, plan_memory
from mx_ops.core.node import Node, NodeEntry, evaluate, variable


def test_indexed_graph_numbering():
    x = sym.Variable("x")
    parts = sym.SliceChannel(x, num_outputs=2, name="sp")
    out = sym.Group([sym.relu(parts[1], name="r"), parts[0]])
    idx = IndexedGraph(out.outputs)
    assert [n.name for n in idx.nodes] == ["x", "sp", "r"]
    assert idx.node_row_ptr == [0, 1, 3, 4]
    assert idx.input_nodes == [0]
    assert idx.inputs == [[], [0], [2]]
    assert idx.outputs == [3, 1]
    assert idx.entry(2) == NodeEntry(idx.nodes[1], 1)
    assert idx.entry_refcounts() == [1, 1, 1, 1]


def test_mutable_inputs_found():
    bn = sym.BatchNorm(sym.Variable("d"), name="bn")
    idx = IndexedGraph(bn.outputs)
    names = {idx.nodes[i].name for i in idx.mutable_input_nodes}
    assert names == {"bn_moving_mean", "bn_moving_var"}


def _loss_grads(out_sym, values):
    """Gradient of sum(out) wrt every variable through the Gradient pass,
    evaluated on NumPy arrays with mx_ops.core.node.evaluate."""
    graph = Graph(out_sym.outputs)
    idx = graph.indexed
    xs = [NodeEntry(idx.nodes[i], 0) for i in idx.input_nodes]
    head = variable("head")
    grads, _ = gradient(graph, xs, [NodeEntry(head, 0)])
    feed = dict(values)
    feed["head"] = np.ones_like(evaluate(out_sym.outputs, values)[0])
    return dict(zip((x.node.name for x in xs), evaluate(grads, feed)))


@pytest.mark.parametrize("build", [
    lambda x, y: x * y + sym.sin(x),
    lambda x, y: sym.tanh(sym.broadcast_add(x, y)) * x,
    lambda x, y: sym.sum(sym.exp(x) * y, axis=1),
    lambda x, y: sym.Concat(x, x * y, dim=0),
])
def test_gradient_pass_matches_finite_differences(build):
    rng = np.random.default_rng(0)
    values = {"x": rng.uniform(-1, 1, (2, 3)), "y": rng.uniform(-1, 1, (2, 3))}
    out = build(sym.Variable("x"), sym.Variable("y"))
    got = _loss_grads(out, values)
    eps = 1e-6
    for name in values:
        numeric = np.zeros_like(values[name])
        for i in np.ndindex(values[name].shape):
            hi = {k: v.copy() for k, v in values.items()}
            lo = {k: v.copy() for k, v in values.items()}
            hi[name][i] += eps
            lo[name][i] -= eps
            numeric[i] = (evaluate(out.outputs, hi)[0].sum()
                          - evaluate(out.outputs, lo)[0].sum()) / (2 * eps)
        np.testing.assert_allclose(got[name], numeric, rtol=1e-6, atol=1e-8, err_msg=name)


def test_gradient_sums_with_one_add_n():
    x = sym.Variable("x")
    out = x * 2.0 + x * 3.0 + sym.sin(x)
    graph = Graph(out.outputs)
    head = variable("head")
    grads, _ = gradient(graph, [NodeEntry(graph.indexed.nodes[0], 0)], [NodeEntry(head, 0)])
    assert grads[0].node.op.name in ("add_n", "elemwise_add")


def test_gradient_of_unreached_input_is_none():
    x, y = sym.Variable("x"), sym.Variable("y")
    out = sym.Group([x * 2.0, sym.BlockGrad(y)])
    graph = Graph(out.outputs)
    idx = graph.indexed
    xs = [NodeEntry(n, 0) for n in idx.nodes if n.is_variable]
    heads = [NodeEntry(variable("h0"), 0), NodeEntry(variable("h1"), 0)]
    grads, _ = gradient(graph, xs, heads)
    by_name = dict(zip((e.node.name for e in xs), grads))
    assert by_name["x"] is not None
    assert by_name["y"] is None or by_name["y"].node.op.name in ("zeros_like", "_zeros")


def _planned(out_sym, shapes, **kw):
    graph = Graph(out_sym.outputs)
    idx = graph.indexed
    known = {idx.entry_id(NodeEntry(idx.nodes[i], 0)): shapes[idx.nodes[i].name]
             for i in idx.input_nodes}
    graph = infer_shape(graph, known)
    graph = infer_type(graph, {e: "float32" for e in known})
    return plan_memory(graph, external=idx.outputs, **kw)


def test_chain_plan_ping_pongs_two_storages():
    x = sym.Variable("x")
    net = x
    for i in range(6):
        net = sym.exp(sym.sin(net))
    g = _planned(net, {"x": (100,)}, inplace=False, share=True)
    assert len(g.attrs["storage_bytes"]) == 2
    assert g.attrs["naive_bytes"] == 11 * 400
    assert g.attrs["planned_bytes"] == 800


def test_inplace_only_when_last_reader():
    x = sym.Variable("x")
    a = sym.exp(x, name="a")
    b = sym.relu(a, name="b")          # a read again below: no in-place
    c = sym.sigmoid(b, name="c")       # b's last reader: in place
    out = c + a
    g = _planned(out, {"x": (10,)}, inplace=True, share=False)
    idx = g.indexed
    sid = g.attrs["storage_id"]
    e = {n.name: idx.entry_id(NodeEntry(n, 0)) for n in idx.nodes}
    assert sid[e["b"]] != sid[e["a"]]
    if any(p == (0, 0) for p in idx.nodes[idx.node_id(idx.entry(e["c"]).node)].op.inplace):
        assert sid[e["c"]] == sid[e["b"]] and e["c"] in g.attrs["inplace_entries"]
    assert sid[idx.outputs[0]] == EXTERNAL


def test_storage_grows_to_fit_within_range():
    x = sym.Variable("x")
    small = sym.exp(x)                                  # 100 floats
    s = sym.sin(small)
    big = sym.Concat(s, s, s, s, dim=0)                 # 400 floats
    out = sym.exp(big)
    g = _planned(out, {"x": (100,)}, inplace=False, share=True)
    assert g.attrs["planned_bytes"] <= g.attrs["naive_bytes"]
    assert max(g.attrs["storage_bytes"]) == 1600


def test_unplanned_baseline():
    x = sym.Variable("x")
    out = sym.exp(sym.sin(sym.cos(x)))
    g = _planned(out, {"x": (8,)}, inplace=False, share=False)
    assert g.attrs["planned_bytes"] == g.attrs["naive_bytes"] == 2 * 32


def test_variable_node_helpers():
    n = Node(None, "v", {}, ())
    assert n.is_variable and n.attrs == {}
