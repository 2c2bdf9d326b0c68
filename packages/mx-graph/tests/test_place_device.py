"""PlaceDevice and group2ctx model parallelism.

Two CPU contexts, cpu(0) and cpu(1), are distinct devices here (each has
its own engine worker), so placement, the copies between devices and the
executor's per-device arrays are all checked without a GPU; the gpu test
repeats the two-group MLP with a CPU and a GPU group."""
import numpy as np
import pytest

from mx_engine import cpu, gpu
from mx_engine.base import MXNetError
from mx_graph import AttrScope, NameManager, sym
from mx_graph.graph import Graph
from mx_graph.passes.gradient import gradient_graph
from mx_graph.passes.infer import infer_shape, infer_type
from mx_graph.passes.place_device import COPY_OP, place_device
import mx_ndarray as nd
from mx_ops.core.node import NodeEntry

C0, C1 = cpu(0), cpu(1)


# -- helpers -----------------------------------------------------------------
def _placed(graph):
    """{node name: Context} of a placed graph (names are unique here)."""
    idx = graph.indexed
    return {n.name: c for n, c in zip(idx.nodes, graph.attrs["device_ctx"])}


def _copies(graph):
    """{(source node name, destination Context)} of the copy nodes."""
    idx = graph.indexed
    return sorted((n.inputs[0].node.name, str(c))
                  for n, c in zip(idx.nodes, graph.attrs["device_ctx"])
                  if not n.is_variable and n.op.name == COPY_OP)


def _check_consistent(graph):
    """Every node reads only entries on its own device, except copies,
    which read from another one; "device" and "device_ctx" agree."""
    idx = graph.indexed
    ctx, dev = graph.attrs["device_ctx"], graph.attrs["device"]
    assert len(ctx) == len(dev) == idx.num_nodes
    for a, b in zip(dev, ctx):
        assert ctx[dev.index(a)] == b
    for nid, node in enumerate(idx.nodes):
        for e in node.inputs:
            src = ctx[idx.node_id(e.node)]
            if node.op.name == COPY_OP:
                assert src != ctx[nid], node.name
            else:
                assert src == ctx[nid], (node.name, e.node.name)


def _chain():
    """MXNet's test_model_parallel chain: (data1 + data2) * 3 in dev1, + data3 in dev2."""
    with NameManager():                 # _plus0, _mulscalar0, _plus1 as in MXNet
        data1, data2, data3 = (sym.Variable(f"data{i}") for i in (1, 2, 3))
        with AttrScope(ctx_group="dev1"):
            net = (data1 + data2) * 3.0
        with AttrScope(ctx_group="dev2"):
            net = net + data3
    return net


def _mlp(batch_norm=False):
    """MXNet's test_ctx_group network (smaller)."""
    with AttrScope(ctx_group="stage1"):
        data = sym.Variable("data")
        fc1 = sym.FullyConnected(data=data, name="fc1", num_hidden=16)
        act1 = sym.Activation(data=fc1, name="relu1", act_type="relu")
    with AttrScope(ctx_group="stage2"):
        fc2 = sym.FullyConnected(data=act1, name="fc2", num_hidden=12)
        act2 = sym.Activation(data=fc2, name="relu2", act_type="relu")
        fc3 = sym.FullyConnected(data=act2, name="fc3", num_hidden=5)
        if batch_norm:
            fc3 = sym.BatchNorm(fc3, name="batchnorm0")
        net = sym.SoftmaxOutput(data=fc3, name="softmax")
    return net


def _values(sym, shapes, seed=0):
    """Random values for every argument and auxiliary state."""
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: rng.uniform(-1, 1, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    if "softmax_label" in args:
        args["softmax_label"] = rng.integers(0, 5, arg_shapes[sym.list_arguments().index(
            "softmax_label")]).astype(np.float32)
    aux = {n: (np.ones(s) if n.endswith("var") else np.zeros(s)).astype(np.float32)
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _train_step(sym, ctx, group2ctx, shapes, values, grad_req="write"):
    ex = sym.simple_bind(ctx, group2ctx=group2ctx, grad_req=grad_req, **shapes)
    args, aux = values
    for name, arr in ex.arg_dict.items():
        arr[:] = args[name]
    for name, arr in ex.aux_dict.items():
        arr[:] = aux[name]
    ex.forward(is_train=True)
    ex.backward()
    return ex


def _grad_graph(sym):
    """The forward graph plus the gradients of every argument, as the
    executor builds it (head gradients are variables)."""
    from mx_ops.core.node import Node
    fwd = Graph(sym._outputs)
    idx = fwd.indexed
    xs = [NodeEntry(idx.nodes[i], 0) for i in idx.input_nodes
          if idx.nodes[i].name in sym.list_arguments()]
    heads = [NodeEntry(Node(None, f"head{i}", {}, ()), 0) for i in range(len(fwd.outputs))]
    return gradient_graph(fwd, xs, heads)[0]


# -- the pass ------------------------------------------------------------------
def test_groups_place_nodes_and_copies_sit_exactly_at_boundaries():
    g = place_device(Graph(_chain()._outputs), C0, {"dev1": C0, "dev2": C1})
    _check_consistent(g)
    placed = _placed(g)
    # The grouped nodes go to their groups; the ungrouped variables where
    # they are read.
    assert placed["_plus0"] == placed["_mulscalar0"] == C0
    assert placed["_plus1"] == C1
    assert placed["data1"] == placed["data2"] == C0 and placed["data3"] == C1
    # One edge crosses from dev1 to dev2: one copy, named as nnvm names it.
    assert _copies(g) == [("_mulscalar0", "cpu(1)")]
    assert "_mulscalar0_0_copy" in placed
    assert g.attrs["device"][g.indexed.node_id(g.outputs[0].node)] == 1


def test_the_default_context_takes_what_no_group_reaches():
    a, b = sym.Variable("a"), sym.Variable("b")
    with AttrScope(ctx_group="g"):
        x = sym.exp(a, name="x")
    y = sym.relu(x, name="y")               # after a grouped node: follows it
    z = sym.sin(b, name="z")                # nothing grouped near it
    g = place_device(Graph(sym.Group([y, z])._outputs), C0, {"g": C1})
    placed = _placed(g)
    assert placed["a"] == placed["x"] == placed["y"] == C1
    assert placed["b"] == placed["z"] == C0
    assert _copies(g) == []
    assert len(g.indexed.nodes) == 5           # nothing crossed: the same nodes


def test_one_copy_per_entry_and_destination_device():
    a = sym.Variable("a")
    with AttrScope(ctx_group="g0"):
        x = sym.exp(a, name="x")
    with AttrScope(ctx_group="g1"):
        p = sym.sin(x, name="p")
        q = sym.cos(x, name="q")            # a second reader on cpu(1)
    with AttrScope(ctx_group="g2"):
        r = sym.tanh(x, name="r")           # a reader on a third device
    C2 = cpu(2)
    g = place_device(Graph(sym.Group([p, q, r])._outputs), C0,
                     {"g0": C0, "g1": C1, "g2": C2})
    _check_consistent(g)
    assert _copies(g) == [("x", "cpu(1)"), ("x", "cpu(2)")]
    idx = g.indexed
    node = {n.name: n for n in idx.nodes if n.op is None or n.op.name != COPY_OP}
    assert node["p"].inputs[0].node is node["q"].inputs[0].node


def test_backward_nodes_go_where_their_forward_nodes_are():
    g = place_device(_grad_graph(_mlp()), C0, {"stage1": C1, "stage2": C0})
    _check_consistent(g)
    idx = g.indexed
    ctx = g.attrs["device_ctx"]
    forward_of = g.attrs["forward_node"]
    assert forward_of, "the Gradient pass records the forward node of its nodes"
    for nid, node in enumerate(idx.nodes):
        f = forward_of.get(node._id)
        if f is not None:
            assert ctx[nid] == ctx[idx.node_id(f)], (node.name, f.name)
    placed = _placed(g)
    assert placed["fc1"] == placed["relu1"] == C1
    assert placed["fc2"] == placed["softmax"] == C0
    # The forward boundary is crossed once each way: relu1's output forward,
    # fc2's data gradient backward.
    assert _copies(g) == [("fc2_backward", "cpu(1)"), ("relu1", "cpu(0)")]


def test_a_backward_node_follows_a_forward_node_placed_by_its_reader():
    # fc1 has no group: only its reader fc2 places it (nnvm's backward
    # sweep).  nnvm's single forward sweep would leave fc1's backward node
    # on the default device; here it goes with fc1.
    data = sym.Variable("data")
    fc1 = sym.FullyConnected(data=data, name="fc1", num_hidden=4)
    with AttrScope(ctx_group="far"):
        net = sym.FullyConnected(data=fc1, name="fc2", num_hidden=3)
    g = place_device(_grad_graph(net), C0, {"far": C1})
    _check_consistent(g)
    placed = _placed(g)
    assert placed["fc1"] == placed["fc1_weight"] == placed["data"] == C1
    assert all(c == C1 for c in placed.values()), placed
    assert _copies(g) == []


def test_nodes_are_replaced_not_modified():
    net = _chain()
    before = [(n, list(n.inputs)) for n in Graph(net._outputs).indexed.nodes]
    g = place_device(Graph(net._outputs), C0, {"dev1": C0, "dev2": C1})
    for node, inputs in before:
        assert node.inputs == inputs
    plus1 = net._outputs[0].node
    new = g.outputs[0].node
    assert new is not plus1 and new.name == plus1.name and new.attrs == plus1.attrs
    assert new.inputs[0].node.op.name == COPY_OP
    assert new.inputs[1].node is plus1.inputs[1].node    # data3: unchanged


def _known(graph, value):
    """{entry id of 'data' and of the head gradients: value}."""
    idx = graph.indexed
    return {idx.entry_id(i, 0): value[idx.nodes[i].name] for i in idx.input_nodes
            if idx.nodes[i].name in value}


def test_shapes_and_dtypes_are_carried_over():
    shapes = {"data": (4, 10), "head0": (4, 5)}
    dtypes = {"data": "float32", "head0": "float32"}
    g = _grad_graph(_mlp())
    g = infer_type(infer_shape(g, _known(g, shapes)), _known(g, dtypes))
    placed = place_device(g, C0, {"stage1": C1, "stage2": C0})
    assert _copies(placed)                     # the entries were renumbered
    # What inference gives on the placed graph is what was carried over.
    again = infer_type(infer_shape(Graph(placed.outputs), _known(placed, shapes)),
                       _known(placed, dtypes))
    assert len(placed.attrs["shape"]) == placed.indexed.num_entries
    assert placed.attrs["shape"] == again.attrs["shape"]
    assert placed.attrs["dtype"] == again.attrs["dtype"]
    assert None not in placed.attrs["shape"]
    assert set(placed.attrs["dtype"]) == {"float32"}


def test_one_device_for_every_group_inserts_nothing():
    net = _chain()
    g = Graph(net._outputs)
    placed = place_device(g, C1, {"dev1": C1, "dev2": C1})
    assert placed.outputs == g.outputs
    assert placed.attrs["device"] == [0] * g.indexed.num_nodes
    assert set(placed.attrs["device_ctx"]) == {C1}


def test_colocated_outputs_get_a_dedicated_copy():
    with AttrScope(ctx_group="a"):
        w = sym.Variable("w")
    with AttrScope(ctx_group="b"):
        y = sym.exp(w, name="y")
    g = Graph(list(y._outputs) + list(y._outputs))   # y twice, the second to w's device
    placed = place_device(g, C0, {"a": C0, "b": C1}, colocate_outputs={1: w._outputs[0].node})
    _check_consistent(placed)
    first, second = placed.outputs
    assert first.node.name == "y"
    assert second.node.op.name == COPY_OP and second.node.inputs[0].node is first.node
    assert placed.attrs["device_ctx"][placed.indexed.node_id(second.node)] == C0


def test_unknown_groups_and_bad_arguments_raise():
    g = Graph(_chain()._outputs)
    with pytest.raises(MXNetError, match=r"node '_plus1' is in ctx_group 'dev2', which "
                                         r"group2ctx does not assign \(it assigns \['dev1'\]\)"):
        place_device(g, C0, {"dev1": C1})
    with pytest.raises(TypeError, match=r"group2ctx\['dev1'\] must be a Context"):
        place_device(g, C0, {"dev1": "cpu(1)", "dev2": C0})
    with pytest.raises(TypeError, match="default_ctx must be a Context"):
        place_device(g, "cpu", {"dev1": C1})


def test_a_mutable_state_cannot_cross_devices():
    with AttrScope(ctx_group="stats"):
        mean = sym.Variable("bn_moving_mean")
    with AttrScope(ctx_group="net"):
        bn = sym.BatchNorm(sym.Variable("x"), moving_mean=mean, name="bn")
    with pytest.raises(MXNetError, match=r"'bn' \(BatchNorm\) writes its input 'moving_mean' "
                                         r"\('bn_moving_mean'\) in place, but that input is "
                                         r"on cpu\(1\) and the node on cpu\(0\)"):
        place_device(Graph(bn._outputs), C0, {"stats": C1, "net": C0})


# -- the executor -----------------------------------------------------------------
SHAPES = {"data": (6, 10)}
# Given, so that the test does not rest on BatchNorm's shape inference.
BN_SHAPES = {f"batchnorm0_{n}": (5,) for n in ("gamma", "beta", "moving_mean", "moving_var")}


def test_two_group_mlp_matches_the_single_device_executor():
    net = _mlp()
    values = _values(net, SHAPES)
    group2ctx = {"stage1": C1, "stage2": C0}
    ref = _train_step(net, C0, None, SHAPES, values)
    ex = _train_step(net, C0, group2ctx, SHAPES, values)
    stage1 = set(sym.Group([net.get_internals()["relu1_output"]]).list_arguments())
    assert stage1 == {"data", "fc1_weight", "fc1_bias"}
    for name in net.list_arguments():
        want = C1 if name in stage1 else C0
        assert ex.arg_dict[name].context == want, name
        assert ex.grad_dict[name].context == want, name
    assert ex.outputs[0].context == C0
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-6)
    for name in net.list_arguments():
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), ref.grad_dict[name].asnumpy(),
                                   rtol=1e-5, atol=1e-7, err_msg=name)
    assert np.abs(ex.grad_dict["fc1_weight"].asnumpy()).max() > 1e-3   # not vacuous
    # A second step on the same executor still agrees (the copies re-run).
    for e in (ex, ref):
        e.arg_dict["data"][:] = values[0]["data"] * 2
        e.forward(is_train=True)
        e.backward()
    np.testing.assert_allclose(ex.grad_dict["fc1_weight"].asnumpy(),
                               ref.grad_dict["fc1_weight"].asnumpy(), rtol=1e-5, atol=1e-7)
    assert _copies(ex._bound.graph) == [("fc2_backward", "cpu(1)"), ("relu1", "cpu(0)")]


def test_auxiliary_states_live_on_their_groups_device():
    net = _mlp(batch_norm=True)
    shapes = dict(SHAPES, **BN_SHAPES)
    values = _values(net, shapes)
    group2ctx = {"stage1": C1, "stage2": C0}
    ex = net.simple_bind(C0, group2ctx=group2ctx, **shapes)
    ref = net.simple_bind(C0, **shapes)
    assert [a.context for a in ex.aux_arrays] == [C0, C0]
    assert ex.arg_dict["batchnorm0_gamma"].context == C0
    for e in (ex, ref):
        for name, arr in e.arg_dict.items():
            arr[:] = values[0][name]
        for name, arr in e.aux_dict.items():
            arr[:] = values[1][name]
        e.forward(is_train=True)
        e.backward()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-6)
    for name in net.list_arguments():
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), ref.grad_dict[name].asnumpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.abs(ex.grad_dict["batchnorm0_beta"].asnumpy()).max() > 1e-4   # fix_gamma: gamma gets 0
    for name in net.list_auxiliary_states():       # the moving statistics, updated in place
        np.testing.assert_allclose(ex.aux_dict[name].asnumpy(), ref.aux_dict[name].asnumpy(),
                                   rtol=1e-6, err_msg=name)
        assert not np.array_equal(ex.aux_dict[name].asnumpy(), values[1][name])


def test_every_array_is_allocated_on_its_nodes_device():
    net = _mlp()
    ex = net.simple_bind(C0, group2ctx={"stage1": C1, "stage2": C0}, **SHAPES)
    g = ex._bound.graph
    idx = g.indexed
    ctx = g.attrs["device_ctx"]
    for nid, node in enumerate(idx.nodes):
        for eid in range(idx.node_row_ptr[nid], idx.node_row_ptr[nid + 1]):
            if ex._arrays[eid] is not None:
                assert ex._arrays[eid].context == ctx[nid], node.name
    for sid, storage in enumerate(ex._storage):
        owners = {ctx[idx.node_id(idx.entry(e).node)]
                  for e, s in enumerate(g.attrs["storage_id"]) if s == sid}
        assert owners == {storage.context}, sid


def test_model_parallel_chain_bind_matches_one_device():
    # MXNet's tests/python/unittest/test_model_parallel.py::test_chain.
    net = _chain()
    shape = (4, 5)
    arr = [nd.full(shape, v, ctx=c) for v, c in ((1.0, C0), (2.0, C0), (3.0, C1))]
    arr_grad = [nd.zeros(shape, ctx=c) for c in (C0, C0, C1)]
    ex1 = net.bind(C0, args=arr, args_grad=arr_grad, group2ctx={"dev1": C0, "dev2": C1})
    arr2 = [a.copyto(C0) for a in arr]
    arr_grad2 = [a.copyto(C0) for a in arr_grad]
    ex2 = net.bind(C0, args=arr2, args_grad=arr_grad2)
    ex1.forward(is_train=True)
    ex2.forward(is_train=True)
    assert ex1.outputs[0].context == C1
    np.testing.assert_allclose(ex1.outputs[0].asnumpy(), ex2.outputs[0].asnumpy())
    np.testing.assert_allclose(ex1.outputs[0].asnumpy(), np.full(shape, 12.0))
    out_grad = nd.full(shape, 0.5, ctx=C0)           # on another device than the output
    ex1.backward([out_grad])
    ex2.backward([out_grad.copyto(C0)])
    for a, b, want in zip(arr_grad, arr_grad2, (1.5, 1.5, 0.5)):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy())
        np.testing.assert_allclose(a.asnumpy(), np.full(shape, want))
    g = ex1._bound.graph
    _check_consistent(g)
    assert _copies(g) == [("_mulscalar0", "cpu(1)"), ("_plus1_output_head_grad", "cpu(0)")]


def test_bind_with_arrays_on_other_devices_raises():
    net = _chain()
    shape = (4, 5)
    group2ctx = {"dev1": C0, "dev2": C1}
    good = [nd.zeros(shape, ctx=c) for c in (C0, C0, C1)]
    wrong = [nd.zeros(shape, ctx=c) for c in (C0, C0, C0)]
    with pytest.raises(MXNetError, match=r"the array for 'data3' is on cpu\(0\), but the "
                                         r"executor needs it on cpu\(1\), where group2ctx "
                                         r"places it"):
        net.bind(C0, args=wrong, group2ctx=group2ctx)
    with pytest.raises(MXNetError, match=r"the gradient array for 'data1' is on cpu\(1\), "
                                         r"but the executor needs it on cpu\(0\)"):
        net.bind(C0, args=good, args_grad=[nd.zeros(shape, ctx=c) for c in (C1, C0, C1)],
                 group2ctx=group2ctx)
    with pytest.raises(MXNetError, match=r"the array for 'data3' is on cpu\(1\), but the "
                                         r"executor needs it on cpu\(0\), the bind context"):
        net.bind(C0, args=good)                          # no group2ctx: all on C0
    net.bind(C0, args=good, args_grad=[a.copy() for a in good], group2ctx=group2ctx)


def test_grad_req_add_accumulates_through_a_device_copy():
    # w lives in group a, its reader in group b: its gradient is computed on
    # cpu(1) and copied to w's gradient array on cpu(0), adding to it.
    with AttrScope(ctx_group="a"):
        w = sym.Variable("w")
    with AttrScope(ctx_group="b"):
        x = sym.Variable("x")
        y = sym.elemwise_mul(w, x, name="y")
    shape = (3, 4)
    wv = np.arange(12, dtype=np.float32).reshape(shape)
    xv = np.linspace(-1, 1, 12, dtype=np.float32).reshape(shape)
    args = {"w": nd.array(wv, ctx=C0), "x": nd.array(xv, ctx=C1)}
    grad = nd.ones(shape, ctx=C0)
    ex = y.bind(C0, args=args, args_grad={"w": grad}, grad_req={"w": "add", "x": "null"},
                group2ctx={"a": C0, "b": C1})
    g = ex._bound.graph
    assert g.outputs[1].node.op.name == COPY_OP
    head = nd.full(shape, 2.0, ctx=C1)
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward([head])
    np.testing.assert_allclose(grad.asnumpy(), 1 + 2 * (2 * xv), rtol=1e-6)
    assert ex.outputs[0].context == C1


def test_reshape_keeps_the_placement():
    net = _mlp()
    ex = net.simple_bind(C0, group2ctx={"stage1": C1, "stage2": C0}, **SHAPES)
    small = ex.reshape(data=(3, 10), softmax_label=(3,))
    assert small.arg_dict["fc1_weight"].context == C1
    assert small.arg_dict["fc2_weight"].context == C0
    assert small.outputs[0].context == C0
    assert _copies(small._bound.graph) == [("fc2_backward", "cpu(1)"), ("relu1", "cpu(0)")]
    small.forward(is_train=True, data=np.ones((3, 10), np.float32))
    small.backward()
    assert small.outputs[0].shape == (3, 5)


def test_the_monitor_sees_the_copies():
    net = _mlp()
    ex = net.simple_bind(C0, group2ctx={"stage1": C1, "stage2": C0}, **SHAPES)
    seen = {}
    ex.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.context))
    ex.forward(is_train=True)
    ex.backward()
    assert seen["relu1_0_copy_output"] == C0
    assert seen["fc2_backward_0_copy_output"] == C1


@pytest.mark.gpu
def test_cpu_and_gpu_groups_match_the_cpu_executor():
    net = _mlp()
    values = _values(net, SHAPES, seed=1)
    ref = _train_step(net, cpu(), None, SHAPES, values)
    ex = _train_step(net, cpu(), {"stage1": cpu(), "stage2": gpu(0)}, SHAPES,
                     values)
    assert ex.arg_dict["fc1_weight"].context == cpu()
    assert ex.grad_dict["fc1_weight"].context == cpu()
    assert ex.arg_dict["fc2_weight"].context == gpu(0)
    assert ex.grad_dict["fc2_weight"].context == gpu(0)
    assert ex.outputs[0].context == gpu(0)
    assert _copies(ex._bound.graph) == [("fc2_backward", "cpu(0)"), ("relu1", "gpu(0)")]
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy(),
                               rtol=1e-4, atol=1e-6)
    for name in net.list_arguments():
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), ref.grad_dict[name].asnumpy(),
                                   rtol=1e-3, atol=1e-5, err_msg=name)
